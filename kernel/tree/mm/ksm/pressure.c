// SPDX-License-Identifier: GPL-2.0
/*
 * KSM under memory pressure: with /sys/kernel/mm/ksm/pressure_only set,
 * ksmd scans only the mms whose memory is short, at a rate that grows
 * with how short it is, and stands down when no mm's is.
 *
 * The pressure of a memory cgroup, or of the whole system, is a level
 * from 0 to 100 read from two signals the kernel keeps anyway, the larger
 * of the two:
 *
 * - headroom: what is left below the limit (the smaller of memory.high
 *   and memory.max; for the system, MemAvailable out of all RAM). With
 *   more than SP_PRESSURE_BAND percent of the limit left the level is 0;
 *   below, it rises linearly, to 100 with nothing left;
 * - stalls: PSI's share of time some task waited for memory over the
 *   last ten seconds (memory.pressure's "some avg10"), times ten: 10%
 *   of stalls is full rate.
 *
 * An mm's level is the largest of the system's and its memory cgroup's
 * and their ancestors' (an mm counts in the cgroup of its owner, as its
 * charges do): a cgroup near its limit merges its own processes' pages,
 * its neighbours' wait. ksmd scans pages_to_scan scaled by the level of
 * the mm under its cursor; it passes over an mm whose level is 0, and
 * begins no pass while no registered mm has a level above 0. So while
 * nothing is short ksmd reads one level per registered mm a wake, and
 * wakes once a second at most (sp_pressure_idle_ms()).
 *
 * Layering (see samepage.h): calls into core.c.
 */
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/psi.h>
#include <linux/sched/loadavg.h>

#include "samepage.h"

/* Headroom, in percent of the limit, below which pressure begins. */
#define SP_PRESSURE_BAND	20
/* PSI's some avg10, in percent, that makes the level 100. */
#define SP_PRESSURE_FULL_STALL	10
/* How often ksmd looks at the levels while none is above 0. */
#define SP_PRESSURE_POLL_MS	1000

/* The level ksmd scans at, 0 while it stands down (pressure_level). */
unsigned int sp_pressure_level;

/* The level of @left pages left below a limit of @limit pages. */
static unsigned int sp_headroom_level(unsigned long left, unsigned long limit)
{
	unsigned long band = limit / 100 * SP_PRESSURE_BAND;

	if (!band || left >= band)
		return 0;
	return max_t(u64, 1, div64_u64((u64)(band - left) * 100, band));
}

#ifdef CONFIG_PSI
/* The level of PSI group @psi's memory stalls; none if PSI is off. */
static unsigned int sp_stall_level(struct psi_group *psi)
{
	unsigned long avg10;

	if (!psi)
		return 0;
	avg10 = READ_ONCE(psi->avg[PSI_MEM_SOME][0]);
	return min_t(unsigned long, 100,
		     LOAD_INT(avg10) * 100 / SP_PRESSURE_FULL_STALL);
}
#endif

static unsigned int sp_system_level(void)
{
	unsigned long total = totalram_pages();
	long avail = si_mem_available();
	unsigned int level;

	level = sp_headroom_level(max(avail, 0L), total);
#ifdef CONFIG_PSI
	level = max(level, sp_stall_level(&psi_system));
#endif
	return level;
}

#ifdef CONFIG_MEMCG
static unsigned int sp_memcg_level(struct mem_cgroup *memcg)
{
	unsigned long usage = page_counter_read(&memcg->memory);
	unsigned long limit = min(READ_ONCE(memcg->memory.max),
				  READ_ONCE(memcg->memory.high));
	unsigned int level = 0;

	if (limit < PAGE_COUNTER_MAX)
		level = sp_headroom_level(limit > usage ? limit - usage : 0,
					  limit);
#ifdef CONFIG_PSI
	level = max(level, sp_stall_level(cgroup_psi(memcg->css.cgroup)));
#endif
	return level;
}

/* The largest level of @mm's memory cgroup and its ancestors. */
static unsigned int sp_mm_memcg_level(struct mm_struct *mm)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(mm), *m;
	unsigned int level = 0;

	for (m = memcg; m && !mem_cgroup_is_root(m); m = parent_mem_cgroup(m))
		level = max(level, sp_memcg_level(m));
	mem_cgroup_put(memcg);
	return level;
}
#else
static unsigned int sp_mm_memcg_level(struct mm_struct *mm)
{
	return 0;
}
#endif

/*
 * The level @mm is scanned at: the system's, or its cgroups' if larger.
 * An exited mm's is 1 at least, so that ksmd forgets what it knew of it
 * (which costs no page visit) even while nothing is short.
 */
static unsigned int sp_pressure_of(struct mm_struct *mm, unsigned int system)
{
	if (!atomic_read(&mm->mm_users))
		return max(system, 1U);
	return system == 100 ? system : max(system, sp_mm_memcg_level(mm));
}

/*
 * Between passes: the level of the first registered mm found short, or 0.
 * Each slot costs a look at its cgroups, under sp_slots_lock, which no
 * path that sleeps or waits for memory holds.
 */
static unsigned int sp_pressure_any(unsigned int system)
{
	unsigned int level = system;
	struct sp_slot *s;

	if (level)
		return level;
	spin_lock(&sp_slots_lock);
	list_for_each_entry(s, &sp_slots, list) {
		level = sp_pressure_of(s->mm, 0);
		if (level)
			break;
	}
	spin_unlock(&sp_slots_lock);
	return level;
}

/**
 * sp_pressure_budget - the pages ksmd may scan in this batch
 * @pages: pages_to_scan
 * @slot: the slot under the cursor, or NULL between passes
 *
 * The level is that of the mm under the cursor, or, between passes or
 * once that mm is not short, of the first registered mm that is: the
 * pass passes over the others (sp_pressure_skips()). None short, no
 * pass begins.
 *
 * Return: @pages scaled by the level, at least 1 while the level is above
 * 0; 0 when ksmd stands down.
 */
unsigned int sp_pressure_budget(unsigned int pages, struct sp_slot *slot)
{
	unsigned int level, system = sp_system_level();

	lockdep_assert_held(&sp_mutex);
	level = slot ? sp_pressure_of(slot->mm, system) : 0;
	/* The cursor's mm not short: the pass goes on to one that is. */
	if (!level)
		level = sp_pressure_any(system);
	WRITE_ONCE(sp_pressure_level, level);
	if (!level || !pages)
		return 0;
	return max(1U, (unsigned int)((u64)pages * level / 100));
}

/**
 * sp_pressure_skips - whether the pass passes over @mm, not short
 * @mm: the mm of the slot the cursor enters, which the caller keeps
 *
 * Return: true if its level is 0.
 */
bool sp_pressure_skips(struct mm_struct *mm)
{
	return !sp_pressure_of(mm, sp_system_level());
}

/**
 * sp_pressure_idle_ms - how long ksmd sleeps, @ms being sleep_millisecs
 * @ms: sleep_millisecs
 *
 * Return: @ms, or SP_PRESSURE_POLL_MS at least while ksmd stands down.
 */
unsigned int sp_pressure_idle_ms(unsigned int ms)
{
	if (READ_ONCE(sp_pressure_only) && !READ_ONCE(sp_pressure_level))
		return max(ms, SP_PRESSURE_POLL_MS);
	return ms;
}

#ifdef CONFIG_KSM_VISIT_KUNIT_TEST
#include "tests/pressure-kunit.h"
#endif
