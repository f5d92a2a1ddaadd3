// SPDX-License-Identifier: GPL-2.0
/*
 * KSM scan-time advisor (advisor_mode=scan-time): after each full
 * pass, retune pages_to_scan so that a pass takes about
 * advisor_target_scan_time seconds, within a band of ksmd's CPU use.
 *
 * The arithmetic is the 6.12 implementation's, so that the same settings
 * and the same pass lengths give the same pages_to_scan:
 *   - a pass lasts S whole seconds, at least one;
 *   - its CPU use is C percent of S, at least one;
 *   - "trend" is an exponentially weighted moving average (weight 30% to
 *     the newest) of S as a percentage of the previous pass's length;
 *   - the new value is pages_to_scan * S / target * trend / 100, kept
 *     between what 10% and advisor_max_cpu percent of a CPU would scan at
 *     this pass's cost per page, and at most advisor_max_pages_to_scan.
 * advisor_min_pages_to_scan is only where a new advisor starts.
 *
 * Every pass's CPU use is measured from that pass's own start, the first
 * pass's too (the 6.12 implementation measured the first pass after the
 * advisor was switched on from ksmd's start).
 *
 * All of it runs in ksmd under sp_mutex; sp_advisor_defaults(), called
 * from sysfs, holds sp_mutex too.
 *
 * Layering (see samepage.h): calls into core.c.
 */
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/sched/cputime.h>

#include "samepage.h"

#include <trace/events/ksm.h>

bool sp_advisor_on;
unsigned int sp_advisor_max_cpu = 70;
unsigned long sp_advisor_min_pages_to_scan = 500;
unsigned long sp_advisor_max_pages_to_scan = 30000;
unsigned long sp_advisor_target_scan_time = 200;

#define SP_ADV_NEW_WEIGHT	30	/* percent the newest pass weighs */
#define SP_ADV_CPU_FLOOR	10	/* percent of a CPU at the least */

/* What the advisor remembers between passes; under sp_mutex. */
static struct {
	ktime_t start;		/* this pass began */
	u64 cpu_start;		/* ksmd's runtime then, ns */
	unsigned long last_secs;	/* the previous pass, s; 0: none */
	unsigned long trend;	/* the moving average, percent */
} sp_adv;

/**
 * sp_advisor_defaults - advisor_mode changed: start pages_to_scan afresh
 *
 * Called with sp_mutex held.
 */
void sp_advisor_defaults(void)
{
	lockdep_assert_held(&sp_mutex);
	sp_adv.last_secs = 0;
	sp_adv.trend = 0;
	WRITE_ONCE(sp_pages_to_scan, sp_advisor_on ?
		   (unsigned int)READ_ONCE(sp_advisor_min_pages_to_scan) :
		   100);
}

/**
 * sp_advisor_pass_begin - a full pass starts: note the time and CPU
 */
void sp_advisor_pass_begin(void)
{
	lockdep_assert_held(&sp_mutex);
	sp_adv.start = ktime_get();
	sp_adv.cpu_start = task_sched_runtime(current);
}

/* The pass that just ended, in whole seconds and in percent of a CPU. */
static void sp_adv_measure(unsigned long *secs, unsigned long *cpu_pct)
{
	s64 ms = ktime_ms_delta(ktime_get(), sp_adv.start);
	u64 cpu_ms = div_u64(task_sched_runtime(current) - sp_adv.cpu_start,
			     NSEC_PER_MSEC);

	*secs = max_t(unsigned long, 1, div_s64(ms, MSEC_PER_SEC));
	/* Over whole seconds: C = cpu_ms * 100 / (S * 1000). */
	*cpu_pct = max_t(unsigned long, 1,
			 div64_u64(cpu_ms, (u64)*secs * 10));
}

/* The next pages_to_scan, from a pass of @secs seconds at @cpu_pct. */
static unsigned long sp_adv_retune(unsigned long secs, unsigned long cpu_pct)
{
	unsigned long now = READ_ONCE(sp_pages_to_scan);
	unsigned long to_target, ratio, want, per_pct;

	/* The pass as a percentage of the target, then of the last pass. */
	to_target = max(1UL, READ_ONCE(sp_advisor_target_scan_time) * 100 /
			     secs);
	ratio = max(1UL, secs * 100 / (sp_adv.last_secs ?: secs));
	sp_adv.trend = (sp_adv.trend * (100 - SP_ADV_NEW_WEIGHT) +
			ratio * SP_ADV_NEW_WEIGHT) / 100;
	sp_adv.last_secs = secs;

	want = now * 100 / to_target * sp_adv.trend / 100;
	/* Pages scanned per percent of a CPU at this pass's cost. */
	per_pct = max(1UL, now / cpu_pct);
	want = min(want, per_pct * READ_ONCE(sp_advisor_max_cpu));
	want = max(want, per_pct * SP_ADV_CPU_FLOOR);
	return min(want, READ_ONCE(sp_advisor_max_pages_to_scan));
}

/**
 * sp_advisor_pass_end - a full pass ended: retune pages_to_scan
 *
 * Does nothing unless advisor_mode is scan-time.
 */
void sp_advisor_pass_end(void)
{
	unsigned long secs, cpu_pct, pages;

	lockdep_assert_held(&sp_mutex);
	if (!READ_ONCE(sp_advisor_on))
		return;
	sp_adv_measure(&secs, &cpu_pct);
	pages = sp_adv_retune(secs, cpu_pct);
	WRITE_ONCE(sp_pages_to_scan, pages);
	trace_ksm_advisor(secs, pages, cpu_pct);
}
