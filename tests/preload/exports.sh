#!/bin/sh
# The library exports the dsp_ API, the CUDA hooks and the malloc family, and
# nothing else, all unversioned: a named version node would stop interposition.
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v "^dsp_" | grep -v "^cuda" | grep -v "^$" |
  grep -vxE 'malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size')
if [ -n "$bad" ]; then echo "unexpected exports: $bad"; exit 1; fi
for sym in malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size cudaHostAlloc cudaFreeHost cudaPointerGetAttributes dsp_alloc dsp_free dsp_is_pinned dsp_stats_json dsp_trim dsp_version; do
  nm -D --defined-only "$lib" | grep -q " T $sym\$" || { echo "missing or versioned export: $sym"; exit 1; }
done
if objdump -T "$lib" | grep -E ' (dsp_|malloc$|free$|realloc$)' | grep -v 'Base' ; then echo "versioned exports"; exit 1; fi
echo "exports ok"
