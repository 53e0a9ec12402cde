/*
 * list: order after pushes at both ends and inserts before a node,
 * removal from the middle and the ends, removal of a node on no list, and
 * getting back from a node to the struct that embeds it.
 */
#include <criterion/criterion.h>

#include "common/list.h"

struct item {
	int value;
	struct list_node node;
};

/* The values on L front to back, written into OUT; returns how many. */
static size_t values(const struct list *l, int *out, size_t cap)
{
	size_t n = 0;

	for (struct list_node *p = list_first(l); p && n < cap; p = list_next(l, p))
		out[n++] = list_entry(p, struct item, node)->value;
	return n;
}

Test(list, pushes_keep_order_and_count, .timeout = 10)
{
	struct list l;
	struct item a = { .value = 1 }, b = { .value = 2 }, c = { .value = 3 };
	int got[4];

	list_init(&l);
	cr_assert(list_empty(&l));
	cr_assert_null(list_first(&l));
	list_push_back(&l, &b.node);
	list_push_back(&l, &c.node);
	list_push_front(&l, &a.node);
	cr_assert_eq(l.len, 3);
	cr_assert_eq(values(&l, got, 4), 3);
	cr_assert(got[0] == 1 && got[1] == 2 && got[2] == 3,
		  "order %d %d %d", got[0], got[1], got[2]);
}

Test(list, remove_from_middle_and_ends, .timeout = 10)
{
	struct list l;
	struct item it[4] = { { .value = 0 }, { .value = 1 }, { .value = 2 }, { .value = 3 } };
	int got[4];

	list_init(&l);
	for (int i = 0; i < 4; i++)
		list_push_back(&l, &it[i].node);
	list_remove(&l, &it[1].node);
	cr_assert_not(list_linked(&it[1].node));
	list_remove(&l, &it[3].node);
	cr_assert_eq(values(&l, got, 4), 2);
	cr_assert(got[0] == 0 && got[1] == 2);
	cr_assert_eq(list_entry(list_pop_front(&l), struct item, node), &it[0]);
	cr_assert_eq(list_entry(list_pop_front(&l), struct item, node), &it[2]);
	cr_assert_null(list_pop_front(&l));
	cr_assert(list_empty(&l));
	cr_assert_eq(l.len, 0);
}

Test(list, removing_an_unlisted_node_changes_nothing, .timeout = 10)
{
	struct list l;
	struct item a = { .value = 1 }, loose = { .value = 9 };

	list_init(&l);
	list_node_init(&loose.node);
	list_push_back(&l, &a.node);
	list_remove(&l, &loose.node);
	list_remove(&l, &a.node);
	list_remove(&l, &a.node);
	cr_assert_eq(l.len, 0);
	cr_assert(list_empty(&l));
}

Test(list, insert_before_the_first_and_a_middle_node, .timeout = 10)
{
	struct list l;
	struct item a = { .value = 1 }, b = { .value = 2 }, c = { .value = 3 },
		    d = { .value = 4 };
	int got[4];

	list_init(&l);
	list_push_back(&l, &b.node);
	list_push_back(&l, &d.node);
	list_insert_before(&l, &b.node, &a.node);
	list_insert_before(&l, &d.node, &c.node);
	cr_assert_eq(l.len, 4);
	cr_assert_eq(values(&l, got, 4), 4);
	cr_assert(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4);
	cr_assert_eq(list_entry(list_first(&l), struct item, node), &a);
}
