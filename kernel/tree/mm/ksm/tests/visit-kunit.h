/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests of the per-page state ksmd keeps: how
 * the entries of a slot move the counters, and smart scan's schedule.
 * Included from visit.c.
 */
#include <kunit/test.h>

struct sp_test_ctx {
	struct sp_slot slot;
	struct mm_struct *mm;
	struct sp_stats saved;
};

static int sp_visit_test_init(struct kunit *test)
{
	struct sp_test_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	if (!c)
		return -ENOMEM;
	c->mm = kunit_kzalloc(test, sizeof(*c->mm), GFP_KERNEL);
	if (!c->mm)
		return -ENOMEM;
	c->slot.mm = c->mm;
	xa_init(&c->slot.pages);
	test->priv = c;
	return 0;
}

static void sp_visit_test_exit(struct kunit *test)
{
	struct sp_test_ctx *c = test->priv;

	xa_destroy(&c->slot.pages);
}

/*
 * The counters are ksmd's: a test holds sp_mutex while it moves them and
 * puts them back before letting go (init and exit run in other threads).
 */
static struct sp_test_ctx *sp_test_begin(struct kunit *test)
{
	struct sp_test_ctx *c = test->priv;

	mutex_lock(&sp_mutex);
	c->saved = sp_stats;
	return c;
}

static void sp_test_end(struct sp_test_ctx *c)
{
	sp_stats = c->saved;
	mutex_unlock(&sp_mutex);
}

static void sp_test_entry_counters(struct kunit *test)
{
	struct sp_test_ctx *c = sp_test_begin(test);
	unsigned long tracked = sp_stats.tracked;
	unsigned long unshared = sp_stats.unshared;

	/* First visit: tracked, volatile. */
	sp_set_state(&c->slot, 10, sp_st_make(1, false, 0, 0));
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked + 1);
	KUNIT_EXPECT_EQ(test, c->mm->ksm_rmap_items, 1UL);
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared);
	/* Unchanged: a candidate, counted unshared. */
	sp_set_state(&c->slot, 10, sp_st_make(1, true, 1, 0));
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked + 1);
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared + 1);
	/* Changed again: volatile. */
	sp_set_state(&c->slot, 10, sp_st_make(2, false, 2, 0));
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared);
	/* A candidate that goes away is no longer counted anywhere. */
	sp_set_state(&c->slot, 10, sp_st_make(2, true, 3, 0));
	sp_entry_set(&c->slot, 10, NULL);
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked);
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared);
	KUNIT_EXPECT_EQ(test, c->mm->ksm_rmap_items, 0UL);
	KUNIT_EXPECT_TRUE(test, xa_empty(&c->slot.pages));
	sp_test_end(c);
}

/*
 * A slot's gen moves with every change to its entries but the visited
 * page's own, so that a walk's view of its other pages stays trusted
 * only while nothing else changed them.
 */
static void sp_test_entry_gen(struct kunit *test)
{
	struct sp_test_ctx *c = sp_test_begin(test);
	unsigned long gen = c->slot.gen;
	unsigned int budget = 100;

	sp_set_state(&c->slot, 10, sp_st_make(1, false, 0, 0));
	KUNIT_EXPECT_NE(test, c->slot.gen, gen);
	gen = c->slot.gen;
	c->slot.visiting = 10 + 1;
	sp_set_state(&c->slot, 10, sp_st_make(2, false, 1, 0));
	KUNIT_EXPECT_EQ(test, c->slot.gen, gen);
	sp_set_state(&c->slot, 11, sp_st_make(3, false, 0, 0));
	KUNIT_EXPECT_NE(test, c->slot.gen, gen);
	c->slot.visiting = 0;
	gen = c->slot.gen;
	sp_forget(&c->slot, 10 << PAGE_SHIFT, 12 << PAGE_SHIFT, &budget);
	KUNIT_EXPECT_NE(test, c->slot.gen, gen);
	sp_test_end(c);
}

static void sp_test_forget_range(struct kunit *test)
{
	struct sp_test_ctx *c = sp_test_begin(test);
	unsigned long tracked = sp_stats.tracked;
	unsigned int budget = 100;
	unsigned long vpn;

	for (vpn = 1; vpn <= 8; vpn++)
		sp_set_state(&c->slot, vpn, sp_st_make(vpn, vpn & 1, 0, 0));
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked + 8);
	/* Pages 3 to 5 are gone from the address space. */
	KUNIT_EXPECT_EQ(test, sp_forget(&c->slot, 3 << PAGE_SHIFT,
					6 << PAGE_SHIFT, &budget),
			6UL << PAGE_SHIFT);
	KUNIT_EXPECT_EQ(test, budget, 97U);
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked + 5);
	KUNIT_EXPECT_NULL(test, xa_load(&c->slot.pages, 4));
	KUNIT_EXPECT_NOT_NULL(test, xa_load(&c->slot.pages, 6));
	/* A budget of two stops at the third entry left, page 6. */
	budget = 2;
	KUNIT_EXPECT_EQ(test, sp_forget(&c->slot, 0, ULONG_MAX, &budget),
			6UL << PAGE_SHIFT);
	KUNIT_EXPECT_EQ(test, budget, 0U);
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked + 3);
	budget = 100;
	KUNIT_EXPECT_EQ(test, sp_forget(&c->slot, 6 << PAGE_SHIFT, ULONG_MAX,
					&budget), ULONG_MAX);
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked);
	KUNIT_EXPECT_EQ(test, c->mm->ksm_rmap_items, 0UL);
	sp_test_end(c);
}

/*
 * Forgetting a whole slot erases its xarray a range at a time and takes
 * its entries off the counts once it is empty: pages spread over many
 * ranges and one at the top of the address space, a third of them
 * candidates, forgotten first with a budget too small for all of them.
 */
static void sp_test_forget_some(struct kunit *test)
{
	struct sp_test_ctx *c = sp_test_begin(test);
	unsigned long tracked = sp_stats.tracked;
	unsigned long unshared = sp_stats.unshared;
	unsigned int budget = 1;
	unsigned long vpn;

	for (vpn = 5; vpn < 65536; vpn += 7)
		sp_set_state(&c->slot, vpn, sp_st_make(vpn, !(vpn % 3), 0, 0));
	sp_set_state(&c->slot, ULONG_MAX >> PAGE_SHIFT, sp_st_make(1, 1, 0, 0));
	KUNIT_EXPECT_GT(test, c->slot.cands, 0UL);
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared + c->slot.cands);
	KUNIT_EXPECT_FALSE(test, sp_forget_some(&c->slot, &budget));
	KUNIT_EXPECT_EQ(test, budget, 0U);
	/* Nothing is taken off until the slot is empty. */
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared + c->slot.cands);
	KUNIT_EXPECT_NOT_NULL(test, xa_load(&c->slot.pages, 65525));
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, sp_forget_some(&c->slot, &budget));
	KUNIT_EXPECT_TRUE(test, xa_empty(&c->slot.pages));
	KUNIT_EXPECT_EQ(test, sp_stats.tracked, tracked);
	KUNIT_EXPECT_EQ(test, sp_stats.unshared, unshared);
	KUNIT_EXPECT_EQ(test, c->mm->ksm_rmap_items, 0UL);
	KUNIT_EXPECT_EQ(test, c->slot.cands, 0UL);
	sp_test_end(c);
}

/*
 * Smart scan's schedule: an unchanged unique page is read at visits 1 to
 * 4, 6, 9, 14 and then every ninth; the others are skips.
 */
static void sp_test_smart_schedule(struct kunit *test)
{
	static const unsigned int reads[] = { 1, 2, 3, 4, 6, 9, 14, 23, 32 };
	bool old = READ_ONCE(sp_smart_scan), skip;
	unsigned long st = 0;
	unsigned int visit, next = 0;

	WRITE_ONCE(sp_smart_scan, true);
	for (visit = 1; visit <= 40; visit++) {
		st = sp_smart_age(st, &skip);
		if (!skip) {
			KUNIT_ASSERT_LT(test, next, (unsigned int)ARRAY_SIZE(reads));
			KUNIT_EXPECT_EQ(test, visit, reads[next]);
			next++;
			/* A read page that stayed unchanged is a candidate. */
			st = sp_st_make(7, true, sp_st_age(st),
					sp_st_skip(st));
		} else {
			KUNIT_EXPECT_FALSE(test, sp_st_cand(st));
		}
	}
	KUNIT_EXPECT_EQ(test, next, (unsigned int)ARRAY_SIZE(reads));
	KUNIT_EXPECT_EQ(test, sp_st_hash(st), 7U);
	/* Without smart scan, nothing is skipped and nothing ages. */
	WRITE_ONCE(sp_smart_scan, false);
	KUNIT_EXPECT_EQ(test, sp_smart_age(st, &skip), st);
	KUNIT_EXPECT_FALSE(test, skip);
	WRITE_ONCE(sp_smart_scan, old);
}

/*
 * One page written every @period visits, over @visits visits, by the
 * rules the walk and sp_visit() apply (smart scan off, no recheck): the
 * reads ksmd makes and the faults the writer takes on protected pages.
 */
struct sp_sim {
	unsigned int reads, faults;
};

static struct sp_sim sp_sim_writer(unsigned int period, unsigned int visits)
{
	bool known = false, pte_clean = false, changed;
	struct sp_sim r = {};
	unsigned long st = 0;
	unsigned int v, how;
	u64 content = 1, hash;

	for (v = 1; v <= visits; v++) {
		if (v % period == 0) {
			r.faults += pte_clean;
			pte_clean = false;
			content++;
		}
		how = 0;
		if (known && sp_st_wp(st))
			how = pte_clean ? SP_FOUND_CLEAN : SP_FOUND_UNSURE;
		else if (known && sp_protect_due(st))
			how = SP_FOUND_WP;
		pte_clean |= how & SP_FOUND_WP;
		if (how & SP_FOUND_UNSURE)
			st = sp_st_written(st, false);
		hash = how & SP_FOUND_CLEAN ? sp_st_hash(st) : content;
		r.reads += !(how & SP_FOUND_CLEAN);
		st = sp_st_set_wp(st, how & (SP_FOUND_CLEAN | SP_FOUND_WP));
		changed = !known || !sp_st_hash_is(st, hash);
		st = sp_st_set_still(st, changed ? 0 :
				     min(sp_st_still(st) + 1,
					 sp_still_cap(st, 0)));
		st = sp_st_make(hash, !changed, 0, 0) | (st & SP_ST_CARRY);
		known = true;
	}
	return r;
}

/*
 * DOC: Protecting pages, kept: a writer at least every other pass never
 * faults; at any period, each fault beyond three is repaid by
 * SP_PROTECT_PAYBACK reads saved; a page that holds still is read a few
 * times only; protect_after_scans=0 protects nothing.
 */
static void sp_test_protect_policy(struct kunit *test)
{
	unsigned int old = READ_ONCE(sp_protect_after), after, period;
	const unsigned int visits = 400;
	struct sp_sim r;

	for (after = 1; after <= SP_PROTECT_AFTER_MAX; after++) {
		WRITE_ONCE(sp_protect_after, after);
		for (period = 1; period <= 64; period++) {
			r = sp_sim_writer(period, visits);
			if (period <= after)
				KUNIT_EXPECT_EQ(test, r.faults, 0U);
			if (r.faults > 3)
				KUNIT_EXPECT_GE_MSG(test, visits - r.reads,
						    SP_PROTECT_PAYBACK *
						    (r.faults - 3),
						    "after %u period %u",
						    after, period);
		}
		r = sp_sim_writer(UINT_MAX, visits);
		KUNIT_EXPECT_EQ(test, r.faults, 0U);
		KUNIT_EXPECT_LE(test, r.reads, after + 2);
	}
	WRITE_ONCE(sp_protect_after, 0);
	r = sp_sim_writer(UINT_MAX, visits);
	KUNIT_EXPECT_EQ(test, r.reads, visits);
	r = sp_sim_writer(5, visits);
	KUNIT_EXPECT_EQ(test, r.faults, 0U);
	WRITE_ONCE(sp_protect_after, old);
}

static struct kunit_case sp_scan_cases[] = {
	KUNIT_CASE(sp_test_entry_counters),
	KUNIT_CASE(sp_test_entry_gen),
	KUNIT_CASE(sp_test_forget_range),
	KUNIT_CASE(sp_test_forget_some),
	KUNIT_CASE(sp_test_smart_schedule),
	KUNIT_CASE(sp_test_protect_policy),
	{}
};

static struct kunit_suite sp_visit_suite = {
	.name = "ksm_page_state",
	.init = sp_visit_test_init,
	.exit = sp_visit_test_exit,
	.test_cases = sp_scan_cases,
};

kunit_test_suite(sp_visit_suite);
