#!/bin/sh
# The library exports the dsp_ API and nothing else (hooks join in later
# issues), all unversioned: a named version node would stop interposition.
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v "^dsp_" | grep -v "^cuda" | grep -v "^cuFile" | grep -v "^$")
if [ -n "$bad" ]; then echo "unexpected exports: $bad"; exit 1; fi
for sym in cudaHostAlloc cudaFreeHost cudaPointerGetAttributes cuFileRead cuFileWrite cuFileBufRegister cuFileBufDeregister cuFileHandleRegister cuFileHandleDeregister cuFileDriverOpen cuFileDriverClose cuFileDriverClose_v2 dsp_alloc dsp_free dsp_is_pinned dsp_stats_json dsp_trim dsp_version; do
  nm -D --defined-only "$lib" | grep -q " T $sym\$" || { echo "missing or versioned export: $sym"; exit 1; }
done
if objdump -T "$lib" | grep -E ' (dsp_|cuFile)' | grep -v 'Base' ; then echo "versioned dsp_ symbols"; exit 1; fi
echo "exports ok"
