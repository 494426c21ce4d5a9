/* Every statistic, in the order of the JSON object. Layers add theirs here.
 * DSP_STAT(key, kind, help): kind is COUNTER (only grows) or GAUGE (a value
 * now); help says what it counts, its unit first (bytes, allocations, calls,
 * iocbs...). docs/statistics.md is generated from this table (dspreload env
 * --stats-markdown). The layers' keys (cuda_*, aio_*, cufile_*) are here on
 * purpose: one table, one JSON object, whose keys are an output contract. */
DSP_STAT(pinned_bytes, GAUGE,
         "bytes pinned now (locked with mlock, or registered with the CUDA driver): live blocks "
         "and the pool")
DSP_STAT(locked_bytes, GAUGE, "bytes of those that this process locked with mlock")
DSP_STAT(pinned_bytes_peak, GAUGE, "bytes: the most pinned at once")
DSP_STAT(live_bytes, GAUGE, "bytes of the blocks callers own")
DSP_STAT(blocks_live, GAUGE, "blocks callers own")
DSP_STAT(pool_cached_bytes, GAUGE, "bytes of freed blocks kept pinned for reuse (DSP_POOL_MAX)")
DSP_STAT(pool_hits, COUNTER, "allocations served from the pool")
DSP_STAT(pool_misses, COUNTER, "allocations that pinned new memory")
DSP_STAT(pool_releases, COUNTER,
         "pooled blocks given back to the kernel (unlocked, or unregistered from the CUDA driver)")
DSP_STAT(pinned_new_bytes, COUNTER, "bytes newly populated and pinned")
DSP_STAT(pin_failures, COUNTER,
         "allocations refused: mlock or populate failed, no address space left, or "
         "vm.max_map_count near")
DSP_STAT(pin_stuck_bytes, COUNTER,
         "bytes of failed pins whose pages could not be given back (vm.max_map_count): kept "
         "counted as pinned, never reused")
DSP_STAT(budget_refusals, COUNTER,
         "allocations refused by the budget: DSP_MAX_PINNED (or RLIMIT_MEMLOCK), or the node cap")
DSP_STAT(fallbacks, COUNTER,
         "interposed calls handed to the real function after a failure here (a block not pinned or "
         "not registered, a bounce or a direct cuFile transfer not made)")
DSP_STAT(numa_nodes, GAUGE,
         "NUMA nodes new blocks are placed on (DSP_NUMA), 0 when placement is off or the machine "
         "has one node. Then for each node N below 8 that is online the object also holds "
         "numa_nodeN_pinned_bytes (bytes pinned there, pool included), numa_nodeN_pooled_bytes "
         "(bytes of that node's pool) and numa_nodeN_fallbacks (blocks asked on node N that "
         "landed elsewhere, or could not be bound)")
DSP_STAT(numa_fallbacks, COUNTER,
         "blocks that landed on another NUMA node than asked (the node had no room) or could not "
         "be bound to it: every node's together")
DSP_STAT(registry_ranges, GAUGE, "pinned ranges the registry knows")
DSP_STAT(deferred_frees, COUNTER,
         "frees in a signal handler that interrupted the shim, deferred to the next unlock")
DSP_STAT(deferred_frees_leaked, COUNTER,
         "frees of those dropped because the deferred-free area was full (the blocks leak)")
DSP_STAT(cuda_host_alloc_served, COUNTER,
         "pinned allocations of either CUDA API served by the manager: cudaHostAlloc, "
         "cudaMallocHost, cuMemHostAlloc, cuMemAllocHost")
DSP_STAT(cuda_driver_served, COUNTER,
         "allocations of those made through the driver API (cuMemHostAlloc, cuMemAllocHost)")
DSP_STAT(cuda_host_alloc_passthrough, COUNTER,
         "pinned allocations of either CUDA API handed to the real function")
DSP_STAT(cuda_proc_hooked, COUNTER,
         "driver functions looked up with cuGetProcAddress or cudaGetDriverEntryPoint and answered "
         "with the shim's hook")
DSP_STAT(dlsym_hooked, COUNTER,
         "dlsym/dlvsym lookups of a CUDA or cuFile function answered with the shim's hook")
DSP_STAT(cuda_free_pooled, COUNTER,
         "cudaFreeHost/cuMemFreeHost calls that returned a served block to the pool")
DSP_STAT(cuda_register_inside_block, COUNTER,
         "cudaHostRegister/cuMemHostRegister calls inside a block the manager pinned (dsp_alloc, "
         "malloc hints), answered without a driver registration of their own")
DSP_STAT(cuda_register_external, COUNTER,
         "cudaHostRegister/cuMemHostRegister calls outside the arena that the driver accepted, "
         "recorded in the registry as pinned")
DSP_STAT(cuda_registrations, COUNTER,
         "blocks the shim registered with the CUDA driver: served blocks, and blocks of dsp_alloc "
         "or malloc hints when a CUDA call first needs them registered")
DSP_STAT(cuda_unregistrations, COUNTER,
         "pooled blocks the shim unregistered from the CUDA driver before giving them back")
DSP_STAT(cuda_syncs, COUNTER,
         "device waits: in cudaFreeHost/cuMemFreeHost of a registered block (the real ones wait "
         "too), and before reusing or giving back a registered block freed without one")
DSP_STAT(cufile_direct_host, COUNTER,
         "cuFileRead/cuFileWrite calls into pinned host memory done by the shim, without cuFile's "
         "staging")
DSP_STAT(cufile_direct_bytes, COUNTER, "bytes those calls moved")
DSP_STAT(cufile_autoregistered, COUNTER,
         "device allocations the shim registered with cuFileBufRegister")
DSP_STAT(cufile_passthrough, COUNTER,
         "cuFileRead/cuFileWrite calls handed to the real library with nothing done by the shim")
DSP_STAT(malloc_hinted, COUNTER, "allocations served pinned by malloc hints (DSP_MALLOC_MIN)")
DSP_STAT(malloc_hinted_bytes, GAUGE,
         "bytes of hinted allocations alive now (what DSP_MALLOC_MAX caps)")
DSP_STAT(malloc_hint_rejected, COUNTER,
         "allocations of at least DSP_MALLOC_MIN handed to the real allocator (DSP_MALLOC_FROM, "
         "DSP_MALLOC_MAX, or the manager refused)")
DSP_STAT(budget_bytes, GAUGE,
         "bytes: the budget for memory locked with mlock (DSP_MAX_PINNED, or RLIMIT_MEMLOCK when "
         "lower); 0 until the budget is planned (at the first pin)")
DSP_STAT(pool_max_bytes, GAUGE,
         "bytes: the effective DSP_POOL_MAX; 0 until the budget is planned (at the first pin)")
DSP_STAT(node_cap_bytes, GAUGE,
         "bytes: the node ledger's cap as this process applies it (0: no ledger, budgeting alone)")
DSP_STAT(node_pinned_bytes, GAUGE, "bytes pinned by every process of the node ledger, as last seen")
DSP_STAT(node_users, GAUGE, "processes holding a slot of the node ledger, as last seen")
DSP_STAT(node_refusals, COUNTER, "allocations of the budget refusals refused by the node cap")
DSP_STAT(node_waits, COUNTER,
         "refused allocations that waited (DSP_NODE_WAIT) for other processes' idle pools")
DSP_STAT(node_reclaimed_bytes, COUNTER,
         "bytes this process took back from the slots of processes that died")
DSP_STAT(node_yields, COUNTER,
         "times this process gave its pool back because another process was refused")
DSP_STAT(node_yielded_bytes, COUNTER, "bytes those gave back")
DSP_STAT(aio_iocbs, COUNTER, "iocbs io_submit accepted")
DSP_STAT(aio_direct_pinned, COUNTER,
         "iocbs of those: reads and writes sent with the caller's buffer, which the manager pinned")
DSP_STAT(aio_direct_unpinned, COUNTER,
         "iocbs: reads and writes sent with the caller's buffer, not pinned by the manager")
DSP_STAT(aio_bounced, COUNTER, "iocbs: reads and writes sent through a pinned bounce buffer")
DSP_STAT(aio_bounce_bytes, COUNTER, "bytes those reads and writes asked for")
DSP_STAT(aio_passthrough, COUNTER,
         "iocbs sent unchanged: other commands (fsync, poll, noop), and reads and writes whose "
         "bounce could not be had")
