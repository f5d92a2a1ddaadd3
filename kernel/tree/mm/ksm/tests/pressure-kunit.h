/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of the headroom level (pressure.c): 0 with a fifth of the
 * limit or more left, rising linearly below it to 100 with nothing left,
 * 1 at least once below; 0 for a limit too small to have a band.
 * Included from pressure.c; pure arithmetic, no state.
 */
#include <kunit/test.h>

static void sp_test_headroom_level(struct kunit *test)
{
	/* A limit of 1000 pages: a band of 200. */
	KUNIT_EXPECT_EQ(test, sp_headroom_level(1000, 1000), 0U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(200, 1000), 0U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(199, 1000), 1U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(150, 1000), 25U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(100, 1000), 50U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(20, 1000), 90U);
	KUNIT_EXPECT_EQ(test, sp_headroom_level(0, 1000), 100U);
	/* Below 100 pages there is no band: never short by headroom. */
	KUNIT_EXPECT_EQ(test, sp_headroom_level(0, 99), 0U);
	/* A terabyte of 4 KiB pages does not overflow. */
	KUNIT_EXPECT_EQ(test, sp_headroom_level(0, 1UL << 28), 100U);
}

static struct kunit_case sp_pressure_cases[] = {
	KUNIT_CASE(sp_test_headroom_level),
	{}
};

static struct kunit_suite sp_pressure_suite = {
	.name = "ksm_pressure",
	.test_cases = sp_pressure_cases,
};

kunit_test_suite(sp_pressure_suite);
