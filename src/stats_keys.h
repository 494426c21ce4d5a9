/* Every statistic, in the order of the JSON object. Layers add theirs here.
 * DSP_STAT(key, kind, help): kind is COUNTER (only grows) or GAUGE. */
DSP_STAT(pinned_bytes, GAUGE,
         "bytes pinned now (locked, or registered with the CUDA driver): live blocks and the pool")
DSP_STAT(locked_bytes, GAUGE, "of those, bytes this process locked with mlock")
DSP_STAT(pinned_bytes_peak, GAUGE, "most bytes pinned at once")
DSP_STAT(live_bytes, GAUGE, "bytes of blocks owned by callers")
DSP_STAT(blocks_live, GAUGE, "blocks owned by callers")
DSP_STAT(pool_cached_bytes, GAUGE, "bytes of freed blocks kept locked for reuse")
DSP_STAT(pool_hits, COUNTER, "allocations served from the pool")
DSP_STAT(pool_misses, COUNTER, "allocations that pinned new memory")
DSP_STAT(pool_releases, COUNTER, "pooled blocks unlocked and given back to the kernel")
DSP_STAT(pinned_new_bytes, COUNTER, "bytes newly populated and locked")
DSP_STAT(
    pin_failures, COUNTER,
    "allocations refused: mlock or populate failed, no address space, or vm.max_map_count near")
DSP_STAT(pin_stuck_bytes, COUNTER,
         "bytes of failed pins whose pages could not be given back (vm.max_map_count): kept "
         "counted as pinned, never reused")
DSP_STAT(budget_refusals, COUNTER, "allocations refused by DSP_MAX_PINNED")
DSP_STAT(fallbacks, COUNTER, "interposed calls handed to the real function after a failure here")
DSP_STAT(registry_ranges, GAUGE, "pinned ranges known to the registry")
DSP_STAT(deferred_frees, COUNTER,
         "frees in a signal handler that interrupted the shim, deferred to the next unlock")
DSP_STAT(deferred_frees_leaked, COUNTER,
         "of those, frees dropped because the deferred-free area was full (the blocks leak)")
DSP_STAT(cuda_host_alloc_served, COUNTER,
         "pinned allocations served by the manager: cudaHostAlloc, cudaMallocHost, "
         "cuMemHostAlloc, cuMemAllocHost")
DSP_STAT(cuda_driver_served, COUNTER,
         "of those, through the driver API (cuMemHostAlloc, cuMemAllocHost)")
DSP_STAT(cuda_host_alloc_passthrough, COUNTER,
         "pinned allocations of either API handed to the real function")
DSP_STAT(cuda_proc_hooked, COUNTER,
         "driver functions looked up with cuGetProcAddress or cudaGetDriverEntryPoint and "
         "answered with the shim's hook")
DSP_STAT(dlsym_hooked, COUNTER,
         "dlsym/dlvsym lookups on a CUDA or cuFile library answered with the shim's hook")
DSP_STAT(cuda_free_pooled, COUNTER,
         "cudaFreeHost/cuMemFreeHost calls that returned a block to the pool")
DSP_STAT(cuda_register_inside_block, COUNTER,
         "cudaHostRegister/cuMemHostRegister calls answered inside a registered block")
DSP_STAT(cuda_register_external, COUNTER,
         "cudaHostRegister/cuMemHostRegister calls passed to the driver and recorded as pinned")
DSP_STAT(cuda_registrations, COUNTER, "blocks the shim registered with the driver")
DSP_STAT(cuda_unregistrations, COUNTER,
         "pooled blocks the shim unregistered before giving them back")
DSP_STAT(
    cuda_syncs, COUNTER,
    "device waits: in cudaFreeHost/cuMemFreeHost (the real ones wait too), and before reusing or "
    "giving "
    "back a registered block freed with none")
DSP_STAT(cufile_direct_host, COUNTER,
         "cuFileRead/cuFileWrite calls into pinned host memory done by the shim, without cuFile's "
         "staging")
DSP_STAT(cufile_direct_bytes, COUNTER, "bytes those calls moved")
DSP_STAT(cufile_autoregistered, COUNTER,
         "device allocations the shim registered with cuFileBufRegister")
DSP_STAT(cufile_passthrough, COUNTER,
         "cuFileRead/cuFileWrite calls handed to the real library with nothing done by the shim")
DSP_STAT(malloc_hinted, COUNTER, "allocations served pinned by malloc hints")
DSP_STAT(malloc_hinted_bytes, GAUGE,
         "bytes of hinted allocations alive now (what DSP_MALLOC_MAX caps)")
DSP_STAT(malloc_hint_rejected, COUNTER,
         "allocations of at least DSP_MALLOC_MIN handed to the real allocator (caller filter, "
         "DSP_MALLOC_MAX, or the manager refused)")
DSP_STAT(budget_bytes, GAUGE, "the effective DSP_MAX_PINNED for memory locked with mlock")
DSP_STAT(pool_max_bytes, GAUGE, "the effective DSP_POOL_MAX")
DSP_STAT(node_cap_bytes, GAUGE,
         "the node ledger's cap as this process applies it (0: no ledger, budgeting alone)")
DSP_STAT(node_pinned_bytes, GAUGE,
         "bytes pinned by every process of the node ledger, as last seen (at a refusal)")
DSP_STAT(node_users, GAUGE, "processes holding a slot of the node ledger, as last seen")
DSP_STAT(node_refusals, COUNTER, "of the budget refusals, those of the node cap")
DSP_STAT(node_waits, COUNTER,
         "refused allocations that waited (DSP_NODE_WAIT) for other processes' idle pools")
DSP_STAT(node_reclaimed_bytes, COUNTER,
         "bytes this process took back from the slots of processes that died")
DSP_STAT(node_yields, COUNTER, "pools given back because another process was refused")
DSP_STAT(node_yielded_bytes, COUNTER, "bytes those gave back")
DSP_STAT(aio_iocbs, COUNTER, "iocbs io_submit accepted")
DSP_STAT(aio_direct_pinned, COUNTER,
         "of those, reads and writes sent with the caller's buffer, which the manager pinned")
DSP_STAT(aio_direct_unpinned, COUNTER,
         "reads and writes sent with the caller's buffer, not pinned by the manager")
DSP_STAT(aio_bounced, COUNTER, "reads and writes sent through a pinned bounce buffer")
DSP_STAT(aio_bounce_bytes, COUNTER, "bytes those moved through bounce buffers")
DSP_STAT(aio_passthrough, COUNTER,
         "other iocbs (fsync, poll, noop) and I/O whose bounce could not be had, sent unchanged")
