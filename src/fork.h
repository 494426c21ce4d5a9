/* The fork handlers of every layer, in one pthread_atfork registration. The
 * lock order lives here and only here (docs/design.md, "Locks", lists the same
 * locks in the same order): before fork(2) every registered slot's locks are
 * taken top to bottom, as running code nests them; after it the parent
 * releases them bottom to top, and the child re-initialises them bottom to top
 * (a layer's reset may use the layers below it: aio's adopts into bounce's
 * lists, the manager's reads the registry). */
#ifndef DSP_FORK_H
#define DSP_FORK_H

enum dsp_fork_slot {
    DSP_FORK_AIO,      /* tab_mu (io/aio_state.c) */
    DSP_FORK_BOUNCE,   /* mu (io/bounce.c) */
    DSP_FORK_MANAGER,  /* the manager's mu (src/manager.c) */
    DSP_FORK_REGISTRY, /* wmutex (src/registry.c) */
    DSP_FORK_CUDA,     /* ondemand_mu (preload/cuda_core.c) */
    DSP_FORK_VREG,     /* mu (preload/cuda_vreg.c) */
    DSP_FORK_CUFILE,   /* mu (io/cufile.c) */
    DSP_FORK_SLOTS
};

struct dsp_fork_ops {
    void (*lock)(void);   /* before fork: takes the layer's locks */
    void (*unlock)(void); /* in the parent: releases them */
    void (*child)(void);  /* in the child: re-initialises them and resets the layer */
};

/* The one pthread_atfork, in initialisation before any registration (once
 * per process, even when a child runs initialisation again). */
void dsp_fork_install(void);

/* Fills a slot (again with the same ops: a no-op), so the next fork takes its
 * locks; after dsp_fork_install, with no lock of ours held. A layer
 * initialised lazily registers before any thread can take its locks, and a
 * registration waits for a fork in progress (fork.c's fork_mu), so no fork
 * misses a lock in use and no child inherits fork_mu held. */
void dsp_fork_register(enum dsp_fork_slot slot, const struct dsp_fork_ops *ops);

#endif
