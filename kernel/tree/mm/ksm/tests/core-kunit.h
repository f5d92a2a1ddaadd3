/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of the table of slots by mm, which __ksm_enter() and
 * __ksm_exit() look mms up in under sp_slots_lock: that it grows with the
 * mms registered, so that a lookup stays O(1) at a host's scale, finds
 * each one, and shrinks again. The slots here are not on the list of
 * slots, have no id and name no real mm: their keys are addresses of a
 * buffer, never dereferenced. Included from core.c; runs at boot, before
 * any process registers.
 */
#include <kunit/test.h>
#include <linux/vmalloc.h>

#define SP_TEST_MMS	BIT(17)

/* Buckets in the table now that its resizes are done. */
static unsigned int sp_test_mm_buckets(void)
{
	unsigned int size;

	while (flush_work(&sp_mm_table.run_work))
		;
	rcu_read_lock();
	size = rcu_dereference(sp_mm_table.tbl)->size;
	rcu_read_unlock();
	return size;
}

static void sp_test_slots_by_mm(struct kunit *test)
{
	struct sp_slot *slots;
	unsigned int i, found = 0;
	char *keys;
	int err = 0;

	slots = kvcalloc(SP_TEST_MMS, sizeof(*slots), GFP_KERNEL);
	keys = vmalloc(SP_TEST_MMS);
	if (!slots || !keys)
		goto out;
	for (i = 0; i < SP_TEST_MMS && !err; i++) {
		slots[i].mm = (struct mm_struct *)(keys + i);
		spin_lock(&sp_slots_lock);
		err = rhashtable_insert_fast(&sp_mm_table, &slots[i].hnode,
					     sp_mm_params);
		spin_unlock(&sp_slots_lock);
	}
	KUNIT_ASSERT_EQ(test, err, 0);
	/* Grown to keep its load under three quarters. */
	KUNIT_EXPECT_GE(test, sp_test_mm_buckets(), SP_TEST_MMS);
	spin_lock(&sp_slots_lock);
	for (i = 0; i < SP_TEST_MMS; i++)
		found += sp_slot_of(slots[i].mm) == &slots[i];
	KUNIT_EXPECT_NULL(test, sp_slot_of((struct mm_struct *)(keys - 1)));
	spin_unlock(&sp_slots_lock);
	KUNIT_EXPECT_EQ(test, found, SP_TEST_MMS);
	for (i = 0; i < SP_TEST_MMS; i++) {
		spin_lock(&sp_slots_lock);
		rhashtable_remove_fast(&sp_mm_table, &slots[i].hnode,
				       sp_mm_params);
		spin_unlock(&sp_slots_lock);
	}
	KUNIT_EXPECT_LE(test, sp_test_mm_buckets(), 1024U);
out:
	KUNIT_EXPECT_NOT_NULL(test, slots);
	KUNIT_EXPECT_NOT_NULL(test, keys);
	vfree(keys);
	kvfree(slots);
}

static struct kunit_case sp_core_cases[] = {
	KUNIT_CASE(sp_test_slots_by_mm),
	{}
};

static struct kunit_suite sp_core_suite = {
	.name = "ksm_slots",
	.test_cases = sp_core_cases,
};

kunit_test_suite(sp_core_suite);
