/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of a node's table of sharers: that it grows and shrinks at
 * its bounds, and that every sharer is found after any others were taken
 * out, wrapping around the end of the table included. The tables here
 * belong to no KSM page and name no slot: only their locs are looked at.
 * Included from knode.c.
 */
#include <kunit/test.h>

/* Add a sharer of @loc as sp_sharer_link() does, without a slot. */
static void sp_test_add(struct kunit *test, struct sp_knode *node, u64 loc)
{
	struct sp_sharer sh = { .loc = loc };

	if (sp_sharers_full(node))
		KUNIT_ASSERT_TRUE(test, sp_sharers_resize(node, 2 * node->cap));
	sp_sharer_place(node, &sh);
	node->nr_sharers++;
}

/* Take the sharer of @loc out as sp_drop_sharers() does. */
static void sp_test_del(struct kunit *test, struct sp_knode *node, u64 loc)
{
	struct sp_sharer *sh = sp_sharer_find(node, loc);

	KUNIT_ASSERT_NOT_NULL(test, sh);
	sp_sharer_remove(node, sh - node->sharers);
	node->nr_sharers--;
	sp_sharers_trim(node);
}

static unsigned int sp_test_count(struct sp_knode *node)
{
	struct sp_sharer *sh;
	unsigned int n = 0;

	for (sh = sp_sharer_next(node, node->sharers); sh;
	     sh = sp_sharer_next(node, sh + 1))
		n++;
	return n;
}

/* A node of two sharers keeps two entries; beyond four, a quarter free. */
static void sp_test_sharers_bounds(struct kunit *test)
{
	struct sp_knode node = {};
	u64 loc;

	KUNIT_ASSERT_TRUE(test, sp_sharers_init(&node, 2));
	sp_test_add(test, &node, sp_loc(1, 10));
	sp_test_add(test, &node, sp_loc(2, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 2U);
	sp_test_add(test, &node, sp_loc(3, 10));
	sp_test_add(test, &node, sp_loc(4, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 4U);
	for (loc = 5; loc <= 6; loc++)
		sp_test_add(test, &node, sp_loc(loc, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 8U);
	/* The seventh of eight would leave less than a quarter free. */
	sp_test_add(test, &node, sp_loc(7, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 16U);
	KUNIT_EXPECT_EQ(test, sp_test_count(&node), 7U);
	for (loc = 7; loc >= 3; loc--)
		sp_test_del(test, &node, sp_loc(loc, 10));
	/* Two of sixteen is an eighth: down to four entries at once. */
	KUNIT_EXPECT_EQ(test, node.cap, 4U);
	sp_test_del(test, &node, sp_loc(2, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 4U);
	KUNIT_EXPECT_NOT_NULL(test, sp_sharer_find(&node, sp_loc(1, 10)));
	KUNIT_EXPECT_NULL(test, sp_sharer_find(&node, sp_loc(2, 10)));
	kvfree(node.sharers);
}

/*
 * A large table an eighth full shrinks to the size its sharers fill from
 * a quarter to a half, in one resize; every sharer left is found.
 */
static void sp_test_sharers_shrink_to_fit(struct kunit *test)
{
	struct sp_knode node = {};
	u64 loc;

	KUNIT_ASSERT_TRUE(test, sp_sharers_init(&node, 2));
	for (loc = 1; loc <= 96; loc++)
		sp_test_add(test, &node, sp_loc(loc, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 128U);
	for (loc = 96; loc > 17; loc--)
		sp_test_del(test, &node, sp_loc(loc, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 128U);
	/* 16 of 128 is an eighth: 32 entries, half full. */
	sp_test_del(test, &node, sp_loc(17, 10));
	KUNIT_EXPECT_EQ(test, node.cap, 32U);
	for (loc = 1; loc <= 16; loc++)
		KUNIT_EXPECT_NOT_NULL(test,
				      sp_sharer_find(&node, sp_loc(loc, 10)));
	kvfree(node.sharers);
}

/*
 * Sharers whose home is the last entry fill it and wrap around to the
 * first ones; taking out the one at the end must move the others back so
 * that each is still found.
 */
static void sp_test_sharers_wrap(struct kunit *test)
{
	struct sp_knode node = {};
	u64 locs[3], loc;
	unsigned int n = 0, i;

	KUNIT_ASSERT_TRUE(test, sp_sharers_init(&node, 8));
	for (loc = 1; n < ARRAY_SIZE(locs) && loc < 100000; loc++)
		if (sp_sharer_home(&node, sp_loc(loc, 1)) == node.cap - 1)
			locs[n++] = sp_loc(loc, 1);
	KUNIT_ASSERT_EQ(test, n, (unsigned int)ARRAY_SIZE(locs));
	for (i = 0; i < n; i++)
		sp_test_add(test, &node, locs[i]);
	KUNIT_EXPECT_EQ(test, node.sharers[7].loc, locs[0]);
	KUNIT_EXPECT_EQ(test, node.sharers[0].loc, locs[1]);
	KUNIT_EXPECT_EQ(test, node.sharers[1].loc, locs[2]);
	sp_test_del(test, &node, locs[0]);
	KUNIT_EXPECT_EQ(test, node.sharers[7].loc, locs[1]);
	KUNIT_EXPECT_EQ(test, node.sharers[0].loc, locs[2]);
	KUNIT_EXPECT_EQ(test, node.sharers[1].loc, 0ULL);
	KUNIT_EXPECT_NOT_NULL(test, sp_sharer_find(&node, locs[1]));
	KUNIT_EXPECT_NOT_NULL(test, sp_sharer_find(&node, locs[2]));
	KUNIT_EXPECT_NULL(test, sp_sharer_find(&node, locs[0]));
	kvfree(node.sharers);
}

/*
 * Many sharers, as a forking server gives one KSM page: every one found,
 * then half taken out in an order of their own, then the rest; the
 * probes a find makes stay short throughout.
 */
static void sp_test_sharers_many(struct kunit *test)
{
	const unsigned int nr = 20000;
	struct sp_knode node = {};
	unsigned int i;

	KUNIT_ASSERT_TRUE(test, sp_sharers_init(&node, 2));
	for (i = 1; i <= nr; i++)
		sp_test_add(test, &node, sp_loc(i, 0x7f0000 + i % 7));
	KUNIT_EXPECT_EQ(test, sp_test_count(&node), nr);
	KUNIT_EXPECT_LE(test, 4 * node.nr_sharers, 3 * node.cap);
	for (i = 1; i <= nr; i++) {
		u64 loc = sp_loc(i, 0x7f0000 + i % 7);

		KUNIT_EXPECT_NOT_NULL(test, sp_sharer_find(&node, loc));
	}
	for (i = 1; i <= nr; i += 2)
		sp_test_del(test, &node, sp_loc(i, 0x7f0000 + i % 7));
	for (i = 1; i <= nr; i++) {
		u64 loc = sp_loc(i, 0x7f0000 + i % 7);
		struct sp_sharer *sh = sp_sharer_find(&node, loc);

		if (i & 1)
			KUNIT_EXPECT_NULL(test, sh);
		else
			KUNIT_EXPECT_NOT_NULL(test, sh);
	}
	for (i = 2; i <= nr; i += 2)
		sp_test_del(test, &node, sp_loc(i, 0x7f0000 + i % 7));
	KUNIT_EXPECT_EQ(test, node.nr_sharers, 0U);
	KUNIT_EXPECT_LE(test, node.cap, (unsigned int)SP_SHARERS_DENSE);
	kvfree(node.sharers);
}

static struct kunit_case sp_knode_cases[] = {
	KUNIT_CASE(sp_test_sharers_bounds),
	KUNIT_CASE(sp_test_sharers_shrink_to_fit),
	KUNIT_CASE(sp_test_sharers_wrap),
	KUNIT_CASE(sp_test_sharers_many),
	{}
};

static struct kunit_suite sp_knode_suite = {
	.name = "ksm_sharers",
	.test_cases = sp_knode_cases,
};

kunit_test_suite(sp_knode_suite);
