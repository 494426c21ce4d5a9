/* The one table of dspreload's environment variables. Parsing and storage
 * (config.h, config.c), the printed reference (dspreload env) and
 * docs/configuration.md all come from it: an option is one row plus its use.
 *
 * DSP_OPTION(id, type, secure, default, accepted forms, help), or for a choice
 * DSP_CHOICE(id, secure, default, help).
 * type: BOOL, INT, SIZE, MODE, MSEC, or STRING(bytes), a buffer of that many
 * bytes (the terminating NUL included; a longer value is ignored with a
 * warning) that dsp_opt_str(DSP_OPT_<id>) returns.
 * secure: what secure execution (setuid, setgid, file capabilities: AT_SECURE)
 * honours, whose environment belongs to a less privileged user (issue 14):
 * SECURE_OFF only an off switch (0 for a BOOL, the word off or never for a
 * choice or a size), SECURE_IGNORED nothing.
 * A choice's values are listed once, in order, by DSP_CHOICES_<id>(X) as
 * X(id, VALUE, word): config.h makes of them the constants DSP_<id>_<VALUE>
 * that dsp_opt(DSP_OPT_<id>) returns, config.c the words accepted and printed. */
#define DSP_CHOICES_LOG(X)                                                                         \
    X(LOG, ERROR, error) X(LOG, WARN, warn) X(LOG, INFO, info) X(LOG, DEBUG, debug)
DSP_CHOICE(LOG, SECURE_OFF, "warn",
           "Messages printed on stderr, each prefixed dspreload[PID]: warn shows failures "
           "and fallbacks, info adds one line per setting decided (at start-up, and at "
           "the first pin for the budget and the node ledger), debug "
           "adds every repeat of a failure.")
DSP_OPTION(STATS, BOOL, SECURE_OFF, "0", "0|1",
           "Print a short summary of what the shim did to stderr at exit (processes that "
           "pinned nothing and made no CUDA call print nothing).")
DSP_OPTION(STATS_FILE, STRING(4096), SECURE_IGNORED, "", "a path (%p becomes the pid), or fd:N",
           "Write the statistics as one JSON object to this file at exit (one file per "
           "process when the path holds %p, e.g. /tmp/dsp.%p.json); processes that pinned "
           "nothing write none. The file is written whole or not at all (a new file renamed "
           "over the name); a name that holds a symbolic link, a FIFO, a device or another "
           "user's file is left alone with a warning. fd:N appends the object to open "
           "descriptor N instead (fd:2 is stderr). Its keys: docs/statistics.md.")
DSP_OPTION(STATS_FILE_MODE, MODE, SECURE_IGNORED, "0600", "an octal mode (0600, 0640, 0644)",
           "Permissions of the DSP_STATS_FILE file, whatever the umask.")
DSP_OPTION(MAX_PINNED, SIZE, SECURE_OFF, "auto",
           "auto, bytes (64G, 512M, 1.5T) or a share of RAM (50%)",
           "Most bytes the process keeps pinned, pool included. auto is 80% of RAM, or of "
           "the memory cgroup's room (its limit less its usage) when that is smaller, "
           "which is also what every option's share (50%) is of, "
           "and RLIMIT_MEMLOCK as well when the process lacks CAP_IPC_LOCK. Past it, "
           "allocations fail cleanly (callers fall back to the real function). Whatever "
           "the budget, a block the memory cgroup cannot hold is refused, never populated "
           "into an OOM kill.")
DSP_OPTION(POOL_MAX, SIZE, SECURE_OFF, "10%", "bytes (4G) or a share of RAM (10%)",
           "Most bytes of freed blocks kept pinned for reuse. Freed blocks beyond it are "
           "unlocked and given back to the kernel, largest first.")
#define DSP_CHOICES_NODE(X) X(NODE, AUTO, auto) X(NODE, OFF, off)
DSP_CHOICE(NODE, SECURE_OFF, "auto",
           "The node ledger: every process of this user in the same memory cgroup (or with "
           "the same DSP_NODE_KEY) reserves its pinned bytes in one file in /dev/shm, so "
           "that together they stay under DSP_NODE_MAX_PINNED, a killed process's share "
           "comes back and idle pools yield to a refused process (auto); off: each process "
           "budgets alone, as before. A ledger that cannot be used (another user's file, a "
           "corrupt one, /dev/shm missing or full) is refused with one warning and the "
           "process budgets alone. See docs/deployment.md.")
DSP_OPTION(NODE_MAX_PINNED, SIZE, SECURE_OFF, "auto",
           "auto, off, bytes (512G) or a share of RAM (60%)",
           "Most bytes all processes sharing the node ledger keep pinned together, pools "
           "included; DSP_MAX_PINNED still caps each one. auto is what DSP_MAX_PINNED's auto "
           "is for one process: 80% of RAM, or of the memory cgroup's room. The process that "
           "finds the ledger without users sets the cap; a process asking for less applies "
           "the smaller cap to itself. off is DSP_NODE=off.")
DSP_OPTION(NODE_KEY, STRING(160), SECURE_IGNORED, "",
           "any text of at most 159 bytes (a job id: $SLURM_JOB_ID)",
           "Which processes share a node ledger: those of this user with the same key. "
           "Empty: the memory cgroup that limits the process (or its cgroup when none "
           "does), so that the ranks of one job or container share one cap. A longer key is "
           "ignored with one warning (the default key is used, never a key cut short).")
DSP_OPTION(NODE_WAIT, MSEC, SECURE_IGNORED, "300", "milliseconds, 0 to 60000",
           "How long an allocation refused by the node cap waits, while other processes "
           "give back their idle pools, before it fails (the caller then falls back). 0: "
           "no wait.")
#define DSP_CHOICES_HUGEPAGES(X)                                                                   \
    X(HUGEPAGES, AUTO, auto) X(HUGEPAGES, ALWAYS, always) X(HUGEPAGES, NEVER, never)
DSP_CHOICE(HUGEPAGES, SECURE_OFF, "auto",
           "Transparent huge pages for pinned blocks: auto asks for them (madvise) on "
           "blocks of 2 MiB and more, except on a VM whose host takes free pages back "
           "(virtio free page reporting) where only huge pages this process gave back in "
           "the last 2 s are asked for; a block that asks is timed as it is populated and "
           "turns to small pages once its huge pages cost more than small ones would; "
           "always asks on every block, however slow; never forbids them. Large blocks "
           "pin several times faster where they pay.")
DSP_OPTION(PREFAULT_THREADS, INT, SECURE_IGNORED, "0", "0 (auto) or 1-64",
           "Threads that populate a large new block before it is locked. auto uses up "
           "to 8, one per 64 MiB of the block, at most one per CPU.")
DSP_OPTION(NUMA, STRING(12), SECURE_IGNORED, "auto", "auto|device|cpu|off or a node number",
           "Which NUMA node each new pinned block is placed on (bound with mbind, "
           "MPOL_PREFERRED, before its pages are touched) and pooled on: a block is reused "
           "only for a request on its node. auto: a CUDA allocation (cudaHostAlloc, "
           "cuMemHostAlloc...) on the node of the device current on the calling thread, any "
           "other block (malloc hints, dsp_alloc) on the node of the CPU the calling thread "
           "runs on; device: every block on the node of the device the thread last "
           "allocated for (the CPU's until then); cpu: every block on the calling CPU's node; "
           "a number: every block on that node; off: the kernel's first touch, as without "
           "the shim. A node without room spills to another (one warning, counted per node in "
           "the statistics), never a failure. Nodes 0 to 7 are placed on; a thread on a CPU of "
           "another node gets first touch. Machines with one node place nothing, at no "
           "cost. See docs/deployment.md.")
#define DSP_CHOICES_CUDA(X) X(CUDA, AUTO, auto) X(CUDA, OFF, off)
DSP_CHOICE(CUDA, SECURE_OFF, "auto",
           "Serve cudaHostAlloc, cudaMallocHost and cudaFreeHost from the manager and "
           "answer cudaHostRegister inside its blocks (auto), or pass every CUDA call "
           "through untouched (off).")
DSP_OPTION(ARENA_SIZE, SIZE, SECURE_OFF, "auto", "auto or bytes (1T)",
           "Virtual address space reserved for pinned blocks (no memory is used until "
           "blocks are made). auto is 4x RAM, at least 64 GiB, at most 64 TiB; halved "
           "until the kernel accepts it.")
#define DSP_CHOICES_AIO_BOUNCE(X)                                                                  \
    X(AIO_BOUNCE, MISALIGNED, misaligned)                                                          \
    X(AIO_BOUNCE, UNPINNED, unpinned) X(AIO_BOUNCE, NEVER, never) X(AIO_BOUNCE, ALL, all)
DSP_CHOICE(AIO_BOUNCE, SECURE_OFF, "misaligned",
           "Which libaio I/O on O_DIRECT files goes through a pinned, aligned bounce buffer: "
           "misaligned only what O_DIRECT would refuse for its memory alignment (and reads "
           "at a misaligned offset or length, widened), unpinned also every buffer the "
           "manager has not pinned, never none (only counted), all every read and write "
           "(for testing the bounce path).")
DSP_OPTION(BOUNCE_POOL, SIZE, SECURE_OFF, "256M", "bytes (256M, 1G); below 64K no bouncing",
           "Most bytes of bounce buffers for libaio, in flight and kept for reuse (in "
           "power-of-two sizes from 64 KiB: a 65 MiB read holds a 128 MiB buffer). I/O that "
           "finds the pool full passes through unchanged.")
#define DSP_CHOICES_CUFILE(X) X(CUFILE, AUTO, auto) X(CUFILE, OFF, off)
DSP_CHOICE(CUFILE, SECURE_OFF, "auto",
           "cuFile (GPUDirect Storage): read and write pinned host buffers directly and "
           "register device buffers with cuFileBufRegister once (auto), or pass every "
           "cuFile call through untouched (off).")
DSP_OPTION(CUFILE_REGISTER_MAX, SIZE, SECURE_OFF, "8G", "bytes (8G, 512M); 0 registers nothing",
           "Most bytes of device memory the cuFile layer keeps registered on its own; "
           "past it the least recently used registration is released first. Allocations "
           "larger than this are never registered by the shim.")
DSP_OPTION(MALLOC_MIN, SIZE, SECURE_OFF, "off", "off or bytes (1M, 64K)",
           "Malloc hints: allocations of at least this many bytes (malloc, calloc, realloc, "
           "posix_memalign, aligned_alloc, memalign, valloc, pvalloc) are served pinned by the "
           "manager, so that a later pin_memory(), cudaHostRegister or O_DIRECT write finds "
           "them pinned. off: every allocation goes to the real allocator, at the cost of one "
           "branch. See docs/malloc-hints.md.")
DSP_OPTION(MALLOC_MAX, SIZE, SECURE_OFF, "auto", "auto, bytes (8G) or a share of RAM (25%)",
           "Most bytes of hinted allocations alive at once; past it, allocations go to the "
           "real allocator. auto: only DSP_MAX_PINNED limits them.")
DSP_OPTION(MALLOC_FROM, STRING(1024), SECURE_IGNORED, "",
           "comma-separated library names (libtorch_cpu.so,libfoo)",
           "Only hint allocations whose caller lies in one of these libraries (a name matches "
           "a loaded file whose name equals it or starts with it followed by a dot). Each call "
           "site is resolved once and cached. Empty: any caller.")
