#!/bin/sh
# The library exports the dsp_ API and the hooks, nothing else. dsp_, CUDA
# (runtime and driver), cuFile, dlsym/dlvsym and malloc-family symbols are
# unversioned (a version node of our own
# would stop interposition); the libaio hooks carry exactly libaio's versions,
# the 0.1 forms included (docs/internals.md, "Symbol versions and
# interposition"). The CUDA and cuFile exports are exactly the hooks of the
# table of interposed functions (preload/interposed.h), which $2 lists.
lib=$1
hooks=$2
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v "^$")
mallocs='malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size'
# The program's own memory calls (preload/memcalls.c), unversioned like malloc.
memcalls='mlockall mlock mlock2 munlock munlockall mprotect madvise'
# The lookups that hand out the hooks (preload/dlsym.c).
lookups='dlsym dlvsym'
# The signal-mask calls (preload/sigcalls.c) and the fd calls (preload/fdcalls.c)
# the libaio hooks track, unversioned like malloc (issue 29).
sigcalls='pthread_sigmask sigprocmask sigaction siglongjmp longjmp __longjmp_chk setcontext swapcontext sigblock sigsetmask sighold sigrelse sigset sigsuspend ppoll __ppoll_chk pselect epoll_pwait epoll_pwait2 _longjmp sigpause __sigpause __xpg_sigpause'
fdcalls='close close_range closefrom fclose dup dup2 dup3 fcntl fcntl64 open open64 openat openat64 __open_2 __open64_2 __openat_2 __openat64_2 creat socket accept accept4 pipe pipe2'
bad=$(echo "$syms" | grep -v "^dsp_" | grep -v "^cu" | grep -v "^LIBAIO_0\.[145]$" |
  grep -vxE "$(echo $mallocs $memcalls $lookups $sigcalls $fdcalls | tr ' ' '|')" |
  grep -v -x -e 'io_submit@@LIBAIO_0.1' -e 'io_getevents@@LIBAIO_0.4' -e 'io_getevents@LIBAIO_0.1' \
    -e 'io_cancel@@LIBAIO_0.4' -e 'io_cancel@LIBAIO_0.1' -e 'io_destroy@@LIBAIO_0.4' \
    -e 'io_pgetevents@@LIBAIO_0.5')
if [ -n "$bad" ]; then echo "unexpected exports: $bad"; exit 1; fi
for sym in $mallocs $memcalls $lookups $sigcalls $fdcalls cudaHostAlloc cudaFreeHost cudaPointerGetAttributes \
    cudaGetDriverEntryPoint cuMemHostAlloc cuMemAllocHost cuMemAllocHost_v2 cuMemFreeHost \
    cuMemHostRegister cuMemHostRegister_v2 cuMemHostUnregister cuGetProcAddress_v2 \
    cuFileRead cuFileWrite cuFileBufRegister cuFileBufDeregister cuFileHandleRegister \
    cuFileHandleDeregister cuFileDriverOpen cuFileDriverClose cuFileDriverClose_v2 \
    dsp_alloc dsp_free dsp_is_pinned dsp_stats_json dsp_trim dsp_version \
    io_submit@@LIBAIO_0.1 io_getevents@@LIBAIO_0.4 io_getevents@LIBAIO_0.1 io_cancel@@LIBAIO_0.4 io_cancel@LIBAIO_0.1 \
    io_destroy@@LIBAIO_0.4 io_pgetevents@@LIBAIO_0.5; do
  echo "$syms" | grep -q -x "$sym" || { echo "missing or wrongly versioned export: $sym"; exit 1; }
done
if [ -n "$hooks" ]; then
  table=$("$hooks" names | sort) || { echo "$hooks names failed"; exit 1; }
  exported=$(echo "$syms" | grep "^cu" | sort)
  if [ "$table" != "$exported" ]; then
    echo "CUDA and cuFile exports differ from preload/interposed.h's hooks:"
    echo "hooks not exported:" $(echo "$table" | grep -vxF "$exported")
    echo "exports not in the table:" $(echo "$exported" | grep -vxF "$table")
    exit 1
  fi
fi
if objdump -T "$lib" | grep -E ' (dsp_|cu|dlv?sym$)' | grep -v ' UND \| \*UND\* ' | grep -v 'Base'; then echo "versioned dsp_/CUDA/cuFile/dlsym symbols"; exit 1; fi
if objdump -T "$lib" | grep -E ' (malloc|free|calloc|realloc|mlockall|mlock|mlock2|munlock|munlockall|mprotect|madvise)$' | grep -v ' UND \| \*UND\* ' | grep -v 'Base'; then echo "versioned malloc family or memory calls"; exit 1; fi
echo "exports ok"
