/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of when a large folio is worth splitting (thp.c): not
 * before thp_split_min matches in one pass, still in the pass after, no
 * longer two passes on; a small folio always, and every folio once the
 * setting is 1. A folio of 4 pages needs 4 matches at 512, 1 at 64. The
 * folios are allocated here and never mapped. Included from thp.c; runs
 * at boot, before ksmd counts anything, and leaves no count behind.
 */
#include <kunit/test.h>

static void sp_test_thp_worth_split(struct kunit *test)
{
	struct folio *small = folio_alloc(GFP_KERNEL, 0);
	struct folio *large = folio_alloc(GFP_KERNEL, 2);
	unsigned int min = sp_thp_split_min, i;

	KUNIT_ASSERT_NOT_NULL(test, small);
	KUNIT_ASSERT_NOT_NULL(test, large);
	mutex_lock(&sp_mutex);
	WRITE_ONCE(sp_thp_split_min, 64);
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(large, false));
	WRITE_ONCE(sp_thp_split_min, SP_THP_SPLIT_MAX);
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(small, false));
	for (i = 1; i < 4; i++)
		KUNIT_EXPECT_FALSE(test, sp_thp_worth_split(large, true));
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(large, true));
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(large, false));
	sp_thp_pass_end();
	KUNIT_EXPECT_EQ(test, sp_stats.thp_kept, 0UL);
	/* The last pass's count still holds. */
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(large, true));
	sp_thp_pass_end();
	KUNIT_EXPECT_EQ(test, sp_stats.thp_kept, 1UL);
	sp_thp_pass_end();
	/* Two passes on, forgotten. */
	KUNIT_EXPECT_FALSE(test, sp_thp_worth_split(large, false));
	KUNIT_EXPECT_EQ(test, sp_stats.thp_kept, 0UL);
	WRITE_ONCE(sp_thp_split_min, 1);
	KUNIT_EXPECT_TRUE(test, sp_thp_worth_split(large, false));
	WRITE_ONCE(sp_thp_split_min, min);
	sp_thp_forget();
	mutex_unlock(&sp_mutex);
	folio_put(large);
	folio_put(small);
}

static struct kunit_case sp_thp_cases[] = {
	KUNIT_CASE(sp_test_thp_worth_split),
	{}
};

static struct kunit_suite sp_thp_suite = {
	.name = "ksm_thp_split",
	.test_cases = sp_thp_cases,
};

kunit_test_suite(sp_thp_suite);
