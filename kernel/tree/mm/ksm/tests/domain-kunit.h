/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of merge domains: what a slot's domain and salt are under
 * each setting, and that the salt keeps equal content of different
 * domains apart in the index while under "system" a key is the content
 * hash itself.
 * Included from domain.c.
 */
#include <kunit/test.h>

static void sp_test_domain_kinds(struct kunit *test)
{
	struct sp_slot a = { .seq = 7, .uid = KUIDT_INIT(1000) };
	struct sp_slot b = { .seq = 8, .uid = KUIDT_INIT(1000) };
	struct mm_struct *mm = kunit_kzalloc(test, sizeof(*mm), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mm);
	a.mm = mm;
	b.mm = mm;

	sp_domain_compute(&a, SP_DOM_SYSTEM);
	KUNIT_EXPECT_EQ(test, a.dom, 0ULL);
	KUNIT_EXPECT_EQ(test, a.salt, 0U);
	KUNIT_EXPECT_EQ(test, sp_key(&a, 0x1234), 0x1234U);

	/* Two registrations are two processes, however alike. */
	sp_domain_compute(&a, SP_DOM_PROCESS);
	sp_domain_compute(&b, SP_DOM_PROCESS);
	KUNIT_EXPECT_EQ(test, a.dom, 7ULL);
	KUNIT_EXPECT_NE(test, a.dom, b.dom);
	KUNIT_EXPECT_NE(test, sp_key(&a, 0x1234), sp_key(&b, 0x1234));
	KUNIT_EXPECT_NE(test, a.salt, 0U);

	/* One uid is one domain (an mm without owner: its registrar's). */
	sp_domain_compute(&a, SP_DOM_USER);
	sp_domain_compute(&b, SP_DOM_USER);
	KUNIT_EXPECT_EQ(test, a.dom, 1000ULL);
	KUNIT_EXPECT_EQ(test, sp_key(&a, 0x1234), sp_key(&b, 0x1234));
}

/* A domain value means different domains under different settings. */
static void sp_test_domain_salt_kind(struct kunit *test)
{
	struct sp_slot a = { .seq = 1000, .uid = KUIDT_INIT(1000) };
	u32 process_salt;

	a.mm = kunit_kzalloc(test, sizeof(*a.mm), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a.mm);
	sp_domain_compute(&a, SP_DOM_PROCESS);
	process_salt = a.salt;
	a.dom = 1000;
	a.salt = (u32)siphash_2u64(SP_DOM_USER, a.dom, &sp_dom_key);
	KUNIT_EXPECT_NE(test, process_salt, a.salt);
}

static struct kunit_case sp_domain_cases[] = {
	KUNIT_CASE(sp_test_domain_kinds),
	KUNIT_CASE(sp_test_domain_salt_kind),
	{}
};

static struct kunit_suite sp_domain_suite = {
	.name = "ksm_merge_domain",
	.test_cases = sp_domain_cases,
};

kunit_test_suite(sp_domain_suite);
