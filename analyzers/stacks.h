/* Dominator stacks: each block's chain of dominators up to its root, as a
 * stack of names (root name, then types or size classes), for profiles
 * and flame graphs where a frame's cumulative value is its retained size.
 *
 * Stacks are interned in a trie: stack(v) = stack(idom(v)) plus v's label,
 * except when v's label repeats the top of its dominator's stack (a linked
 * list collapses into one frame) or the stack is already HS_STACK_DEPTH
 * deep.  One memoized pass over the nodes, no recursion.
 */
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include "analyzers/retain.h"
#include "analyzers/types.h"
#include "formats/pprof.h"      /* struct hs_stacks and HS_STACK_DEPTH */

struct hs_error *hs_stacks_build(const struct hs_heap *heap,
				 const struct hs_mark *mark,
				 const struct hs_roots *roots,
				 const struct hs_retain *retain,
				 const struct hs_types *types,
				 struct hs_stacks **ret);
void hs_stacks_destroy(struct hs_stacks *s);

#endif
