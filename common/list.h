/*
 * list.h — the one intrusive doubly linked list every module uses for
 * its connections, requests, watches and queues.
 *
 * A struct that lives on a list embeds a `struct list_node`; the list
 * itself is a `struct list` head. The head is a node of its own linked
 * into a ring, so insertion and removal never test for NULL and a node
 * can unlink itself without knowing which list it is on. Inline
 * functions rather than macros (as libuv's queue.h became in 1.46), so
 * the types are checked; list_entry() is the one macro, because getting
 * from a member back to its struct needs offsetof.
 *
 * Nothing here allocates or frees: the caller owns every node.
 */
#ifndef FAULTLINE_LIST_H
#define FAULTLINE_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* A link, embedded in the struct that is listed. A node not on any list
 * points at itself (after list_node_init or list_remove). */
struct list_node {
	struct list_node *prev;
	struct list_node *next;
};

/* A list head. */
struct list {
	struct list_node head;
	size_t len;
};

/* The struct of type T whose member M is the node N. */
#define list_entry(n, T, m) ((T *)(void *)((char *)(n) - offsetof(T, m)))

/* Makes L an empty list. */
static inline void list_init(struct list *l)
{
	l->head.prev = &l->head;
	l->head.next = &l->head;
	l->len = 0;
}

/* Marks N as on no list, so list_linked() is false and list_remove() is
 * harmless. */
static inline void list_node_init(struct list_node *n)
{
	n->prev = n;
	n->next = n;
}

/* True when N is on a list. */
static inline bool list_linked(const struct list_node *n)
{
	return n->next != n;
}

/* True when L has no nodes. */
static inline bool list_empty(const struct list *l)
{
	return l->head.next == &l->head;
}

/* Appends N, which must be on no list, at the tail of L. */
static inline void list_push_back(struct list *l, struct list_node *n)
{
	n->prev = l->head.prev;
	n->next = &l->head;
	l->head.prev->next = n;
	l->head.prev = n;
	l->len++;
}

/* Inserts N, which must be on no list, at the head of L. */
static inline void list_push_front(struct list *l, struct list_node *n)
{
	n->next = l->head.next;
	n->prev = &l->head;
	l->head.next->prev = n;
	l->head.next = n;
	l->len++;
}

/* Inserts N, which must be on no list, just before POS, a node on L. */
static inline void list_insert_before(struct list *l, struct list_node *pos,
				      struct list_node *n)
{
	n->prev = pos->prev;
	n->next = pos;
	pos->prev->next = n;
	pos->prev = n;
	l->len++;
}

/* Unlinks N from L, the list it is on; harmless when N is on no list. */
static inline void list_remove(struct list *l, struct list_node *n)
{
	if (!list_linked(n))
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_node_init(n);
	l->len--;
}

/* The first node of L, or NULL when it is empty. */
static inline struct list_node *list_first(const struct list *l)
{
	return list_empty(l) ? NULL : l->head.next;
}

/* The node after N on L, or NULL when N is the last. */
static inline struct list_node *list_next(const struct list *l,
					  const struct list_node *n)
{
	return n->next == &l->head ? NULL : n->next;
}

/* Removes and returns the first node of L, or NULL when it is empty. */
static inline struct list_node *list_pop_front(struct list *l)
{
	struct list_node *n = list_first(l);

	if (n)
		list_remove(l, n);
	return n;
}

#endif
