/* The layers' own bits in a manager block's flags (DSP_BLOCKF_USER of
 * src/block.h, given at allocation with DSP_BLK_USER), in one place so they
 * never collide. The core stores them and never reads them. */
#ifndef DSP_BLOCK_BITS_H
#define DSP_BLOCK_BITS_H

#define DSP_BLOCKF_CUDA_SERVED  0x4000u /* served by cudaHostAlloc/cudaMallocHost */
#define DSP_BLOCKF_CUDA_ASKED   0x000fu /* the cudaHostAlloc flags it asked for */
#define DSP_BLOCKF_MALLOC       0x2000u /* a malloc hint's block: free() may take it */
#define DSP_BLOCKF_MALLOC_ALIGN 0x01f0u /* log2 of its alignment above the page, else 0 */

#endif
