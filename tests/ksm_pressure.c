// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_pressure.c - pressure mode (samepage's): with
 * /sys/kernel/mm/ksm/pressure_only=1 ksmd scans only the registered mms
 * whose memory is short, pages_to_scan * level / 100 pages a batch, and
 * stands down (no pass, full_scans still) while none is. An mm's level
 * (0..100) is the largest of the system's and its memory cgroup's and
 * that cgroup's ancestors' (the root excluded); a cgroup's, from its
 * limit min(memory.max, memory.high) and memory.current, in pages:
 *
 *   band = limit / 100 * 20, headroom = limit - current (0 if above),
 *   level = 0 if headroom >= band, else max(1, (band - headroom) * 100 /
 *   band).
 *
 * /sys/kernel/mm/ksm/pressure_level is the level ksmd used at its last
 * wake-up, 0 while it stands down. The test kernel has no PSI, so only
 * the headroom counts, and the guest's system must not be short (the
 * tests skip when MemAvailable is below a quarter of MemTotal).
 *
 * The tenants: children in cgroups S (memory.max LIMIT_PAGES, no
 * memory.high) and R (no limit) below ksm_pressure. A tenant holds
 * NPAIRS pairs of equal pages (pages 2j and 2j + 1 alike, no two pairs
 * alike), mergeable, and in S a filler of unique mergeable pages sized
 * from memory.current to bring S to a given share of its limit, far below
 * it (no reclaim, no swap).
 *
 *   pressure_targets: pressure_only=1, S's tenant filled to about 94% of
 *     its limit (level about 70), R's holding pairs only. S's pairs merge
 *     (one frame a pair, per pagemap; content intact) and S stays short
 *     (the saving, NPAIRS pages, is a fraction of the band); three more
 *     full scans then complete, yet R's pairs are not merged (a frame a
 *     page), R's content is intact and ksmd tracks none of its pages
 *     (ksm_rmap_items 0): the passes went over it.
 *   pressure_stops_and_resumes: S's tenant unmaps its filler: S is no
 *     longer short, pressure_level comes to read 0 (within
 *     STANDDOWN_SECONDS), full_scans then stays still over QUIET_SECONDS,
 *     in which ksmd, at sleep_millisecs 0, sleeps about once a second
 *     and takes little CPU, and new pairs that S's tenant writes
 *     meanwhile are not merged. Once a filler brings S to about 94%
 *     again, they merge, content intact. S's tenant then exits, short,
 *     most likely under ksmd's cursor.
 *   pressure_scales: a new tenant in S holding unique pages only (ksmd
 *     must leave the exited mm under its cursor for it): at about 85% of
 *     the limit pressure_level becomes nonzero, and two full scans later
 *     (every batch of the second begun after the filler was complete) it
 *     is within TOL_LEVEL of the formula's value from memory.current
 *     (about 25); at about 95% so it is of its value there (about 75),
 *     larger than at 85%.
 *   pressure_off: with pressure_only=0 again R's pairs merge, as on
 *     mainline, content intact, and pressure_level reads 0.
 *   pressure_bad_input: 2, -1 and "x" are EINVAL, the value unchanged;
 *     pressure_level is read-only.
 *
 * pressure_only is samepage's: every test skips on stock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksmtest.h"

#define LIMIT_PAGES	4096	/* S's memory.max: 16 MiB of 4 KiB pages */
#define NPAIRS		32	/* a tenant's pairs */
#define FILLER_MAX	LIMIT_PAGES	/* room for a filler */
#define BAND_PCT	20	/* the kernel's band, in % of the limit */
#define TOL_LEVEL	10	/* pressure_level against the formula */
#define STANDDOWN_SECONDS 30	/* bound of a wait on pressure_level */
#define QUIET_SECONDS	3	/* window in which nothing may happen */
#define SEED		0x9e55	/* S's pairs: (SEED, j); R's: (SEED + 1) */
#define SEED_NEW	(SEED + 2)	/* S's new pairs */
#define SEED_FILL	(SEED + 16)	/* fillers: (SEED_FILL + 8 * t + gen) */
#define CG_P		CGROUP_ROOT "/ksm_pressure"
#define CG_S		CG_P "/s"
#define CG_R		CG_P "/r"

static const char *const names[] = {
	"pressure_targets", "pressure_stops_and_resumes", "pressure_scales",
	"pressure_off", "pressure_bad_input",
};

/* The tenants, by their slot on the board. */
enum { T_S, T_R, T_SCALES, NR_TENANTS };

/*
 * Shared with the tenants (MAP_SHARED, never mergeable): the filler a
 * tenant is to hold, and the PFNs of its pairs (set 0: its first pairs,
 * set 1: the new ones), 0 where a page is absent.
 */
struct board {
	long filler;
	unsigned long pfn[2][2 * NPAIRS];
};

static struct board *bd;

struct tenant {
	const char *cg;
	int t;			/* its slot on the board */
	bool pairs;		/* holds pairs (set 0) from the start */
	unsigned int seed;	/* of its pairs */
	struct kids k;		/* one child: the tenant */
	bool up;
};

static struct tenant tn[NR_TENANTS] = {
	[T_S] = { .cg = CG_S, .t = T_S, .pairs = true, .seed = SEED },
	[T_R] = { .cg = CG_R, .t = T_R, .pairs = true, .seed = SEED + 1 },
	[T_SCALES] = { .cg = CG_S, .t = T_SCALES },
};

/* map_pairs(), made mergeable; NULL if madvise fails. */
static char *map_mergeable_pairs(unsigned int seed)
{
	char *p = map_pairs(NPAIRS, seed);

	return merge_pages(p, 2 * NPAIRS) ? NULL : p;
}

/*
 * A tenant: joins its cgroup, maps its pairs if it has some, replies 'r'
 * (or 'e'), then obeys, replying 'k' (or 'x'): 'f' makes its filler hold
 * bd->filler unique pages, in a mergeable area of FILLER_MAX pages it
 * maps if it has none, faulting more in or dropping the last ones; 'u'
 * unmaps the filler; 'n' maps new pairs (set 1); 'p' puts the PFNs of
 * its pairs on the board; 'c' checks the content of its pairs and
 * filler; 'q' quits.
 */
static int tenant_main(void *arg, int i, int cmd_fd, int reply_fd)
{
	const struct tenant *tt = arg;
	struct board *b = &bd[tt->t];
	char *pairs[2] = { NULL, NULL }, *fill = NULL;
	unsigned int fseed = SEED_FILL + 8 * tt->t, gen = 0;
	long filled = 0, want;
	char path[256], cmd, r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", tt->cg);
	if (write_file(path, "0")) {
		kid_reply(reply_fd, 'e');
		return 1;
	}
	if (tt->pairs)
		pairs[0] = map_mergeable_pairs(tt->seed);
	if (tt->pairs && !pairs[0]) {
		kid_reply(reply_fd, 'e');
		return 1;
	}
	kid_reply(reply_fd, 'r');
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		r = 'k';
		switch (cmd) {
		case 'f':
			want = b->filler;
			if (want < 0 || want > FILLER_MAX) {
				r = 'x';
				break;
			}
			if (!fill) {
				fill = map_unfaulted(FILLER_MAX);
				gen++;
				if (merge_pages(fill, FILLER_MAX))
					r = 'x';
			}
			for (; filled < want; filled++)
				fill_page(fill, filled, fseed + gen);
			if (filled > want &&
			    madvise(fill + want * page_size,
				    (filled - want) * page_size,
				    MADV_DONTNEED))
				r = 'x';
			filled = want;
			break;
		case 'u':
			if (fill && munmap(fill, FILLER_MAX * page_size))
				r = 'x';
			fill = NULL;
			filled = 0;
			break;
		case 'n':
			if (!pairs[1])
				pairs[1] = map_mergeable_pairs(SEED_NEW);
			r = pairs[1] ? 'k' : 'x';
			break;
		case 'p':
			for (int s = 0; s < 2; s++)
				for (int j = 0; j < 2 * NPAIRS; j++)
					b->pfn[s][j] = pairs[s] ?
						page_pfn(pairs[s] +
							 j * page_size) : 0;
			break;
		case 'c':
			if (!pairs_hold(pairs[0], NPAIRS, tt->seed) ||
			    !pairs_hold(pairs[1], NPAIRS, SEED_NEW) ||
			    pages_wrong(fill, filled, fseed + gen))
				r = 'x';
			break;
		default:
			r = '?';
		}
		kid_reply(reply_fd, r);
	}
	return 0;
}

static bool tenant_start(struct tenant *tt)
{
	char r = 0;

	bd[tt->t].filler = 0;
	tt->up = CHECK(kids_start(&tt->k, 1, tenant_main, tt) == 0,
		       "fork tenant %d", tt->t);
	tt->up = tt->up && CHECK(kids_collect(&tt->k, &r) && r == 'r',
				 "tenant %d ready (%c)", tt->t, r);
	return tt->up;
}

static void tenant_stop(struct tenant *tt)
{
	if (!tt->k.n)
		return;
	kids_send(&tt->k, 'q');
	CHECK(kids_wait(&tt->k), "tenant %d exits", tt->t);
	tt->up = false;
}

/* Command @cmd to tenant @tt: did it reply 'k'? */
static bool tenant_do(struct tenant *tt, char cmd)
{
	char r = 0;

	return CHECK(tt->up && kid_call(&tt->k, 0, cmd, &r) && r == 'k',
		     "tenant %d '%c' (%c)", tt->t, cmd, r);
}

static void tenant_intact(struct tenant *tt)
{
	tenant_do(tt, 'c');
}

/* The pairs of set @s of tenant @tt whose two pages share a frame. */
static int tenant_pairs_shared(struct tenant *tt, int s)
{
	const unsigned long *pfn = bd[tt->t].pfn[s];
	char r = 0;
	int n = 0;

	if (!tt->up || !kid_call(&tt->k, 0, 'p', &r) || r != 'k')
		return -1;
	for (int j = 0; j < NPAIRS; j++)
		n += pfn[2 * j] && pfn[2 * j] == pfn[2 * j + 1];
	return n;
}

/* Its pages present, each in a frame of its own. */
static int pairs_apart(struct tenant *tt, int s)
{
	const unsigned long *pfn = bd[tt->t].pfn[s];
	int n = 0;

	if (tenant_pairs_shared(tt, s) < 0)
		return -1;
	for (int j = 0; j < NPAIRS; j++)
		n += pfn[2 * j] && pfn[2 * j + 1] &&
		     pfn[2 * j] != pfn[2 * j + 1];
	return n;
}

static bool s_pairs_merged(void *arg)
{
	return tenant_pairs_shared(&tn[T_S], *(int *)arg) == NPAIRS;
}

static bool r_pairs_merged(void *arg)
{
	return tenant_pairs_shared(&tn[T_R], 0) == NPAIRS;
}

/* memory.current of @cg, in pages; -1 if it cannot be read. */
static long cg_pages(const char *cg)
{
	char path[256];
	long bytes;

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	bytes = read_long(path);
	return bytes < 0 ? -1 : bytes / (long)page_size;
}

/* The level of a cgroup at @current pages of @limit, as the kernel's. */
static long formula_level(long current, long limit)
{
	long band = limit / 100 * BAND_PCT;
	long left = current < limit ? limit - current : 0;
	long level;

	if (!band || left >= band)
		return 0;
	level = (band - left) * 100 / band;
	return level ? level : 1;
}

static long s_level(void)
{
	return formula_level(cg_pages(CG_S), LIMIT_PAGES);
}

/*
 * Size tenant @tt's filler so that S holds between @lo and @hi percent
 * of its limit by memory.current (which counts the tenant's page tables
 * and whatever else it charged, hence a few rounds); false if it did not
 * come to.
 */
static bool fill_to(struct tenant *tt, int lo, int hi)
{
	long target = (long)LIMIT_PAGES * (lo + hi) / 2 / 100, cur = -1;

	for (int round = 0; round <= 6; round++) {
		cur = cg_pages(CG_S);
		if (cur < 0 || round == 6 ||
		    (cur * 100 >= (long)LIMIT_PAGES * lo &&
		     cur * 100 <= (long)LIMIT_PAGES * hi))
			break;
		bd[tt->t].filler += target - cur;
		if (bd[tt->t].filler < 0)
			bd[tt->t].filler = 0;
		if (!tenant_do(tt, 'f'))
			return false;
	}
	ktap_diag("S: memory.current %ld of %d pages (%ld%%), filler %ld, formula level %ld",
		  cur, LIMIT_PAGES, cur * 100 / LIMIT_PAGES, bd[tt->t].filler,
		  formula_level(cur, LIMIT_PAGES));
	return CHECK(cur * 100 >= (long)LIMIT_PAGES * lo &&
		     cur * 100 <= (long)LIMIT_PAGES * hi,
		     "S at %ld of %d pages, want %d%% to %d%%", cur,
		     LIMIT_PAGES, lo, hi);
}

/*
 * Poll pressure_level every 10 ms until @pred(level, @arg) holds, for at
 * most @seconds: the last level read, *@ok whether it held.
 */
static long wait_level(bool (*pred)(long level, long arg), long arg,
		       double seconds, bool *ok)
{
	double deadline = monotonic_seconds() + seconds;
	long level;

	for (;;) {
		level = ksm_read("pressure_level");
		*ok = pred(level, arg);
		if (*ok || monotonic_seconds() > deadline)
			return level;
		usleep(10000);
	}
}

static bool level_is(long level, long want)
{
	return level == want;
}

static bool level_nonzero(long level, long unused)
{
	return level > 0;
}

static bool level_near(long level, long want)
{
	return level >= 0 && labs(level - want) <= TOL_LEVEL;
}

static void test_targets(void)
{
	int set0 = 0;
	long level, scans;

	CHECK(ksm_reset() == 0, "reset");
	/* Before the tenants: nothing is scanned before S is short. */
	CHECK(ksm_write("pressure_only", 1) == 0, "pressure_only=1");
	if (!tenant_start(&tn[T_R]) || !tenant_start(&tn[T_S]))
		goto out;
	if (!fill_to(&tn[T_S], 93, 95))
		goto out;
	CHECK(ksm_wait_until(s_pairs_merged, &set0, 20), "S's pairs merge");
	tenant_intact(&tn[T_S]);
	level = ksm_read("pressure_level");
	ktap_diag("S's pairs merged: pressure_level %ld, formula %ld, S at %ld pages",
		  level, s_level(), cg_pages(CG_S));
	CHECK(s_level() > 0, "S no longer short: %ld of %d pages",
	      cg_pages(CG_S), LIMIT_PAGES);

	/* ksmd goes on, S being short, but passes over R. */
	scans = ksm_read("full_scans");
	CHECK(ksm_wait_scans(3), "3 full scans with S short");
	ktap_diag("full_scans %ld -> %ld, pressure_level %ld", scans,
		  ksm_read("full_scans"), ksm_read("pressure_level"));
	CHECK(pairs_apart(&tn[T_R], 0) == NPAIRS,
	      "R: %d of %d pairs in two frames (%d shared)",
	      pairs_apart(&tn[T_R], 0), NPAIRS,
	      tenant_pairs_shared(&tn[T_R], 0));
	CHECK(ksm_stat(tn[T_R].k.pid[0], "ksm_rmap_items") == 0 &&
	      ksm_stat(tn[T_R].k.pid[0], "ksm_merging_pages") == 0,
	      "R: ksm_rmap_items %ld, ksm_merging_pages %ld",
	      ksm_stat(tn[T_R].k.pid[0], "ksm_rmap_items"),
	      ksm_stat(tn[T_R].k.pid[0], "ksm_merging_pages"));
	tenant_intact(&tn[T_R]);
	CHECK(ksm_stat(tn[T_S].k.pid[0], "ksm_merging_pages") == 2 * NPAIRS,
	      "S: ksm_merging_pages %ld, want %d",
	      ksm_stat(tn[T_S].k.pid[0], "ksm_merging_pages"), 2 * NPAIRS);
	CHECK(ksm_read("pages_shared") == NPAIRS &&
	      ksm_read("pages_sharing") == NPAIRS,
	      "pages_shared %ld pages_sharing %ld, want %d each",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"), NPAIRS);
	tenant_intact(&tn[T_S]);
out:
	ktap_result(checks_passed(), "%s", names[0]);
}

/* ksmd's voluntary context switches so far (a sleep each), or -1. */
static long ksmd_sleeps(void)
{
	static const char key[] = "voluntary_ctxt_switches:";
	char path[64], line[128];
	long val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", ksmd_pid());
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			val = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return val;
}

/* ksmd's CPU time so far, in seconds, or -1. */
static double ksmd_cpu(void)
{
	unsigned long utime, stime;
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", ksmd_pid());
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* After ")": state and 10 more fields, then utime, stime. */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

static void test_stops_and_resumes(void)
{
	long scans, level, quiet_scans, sleeps;
	double cpu;
	double end;
	bool ok;
	int set1 = 1;

	if (!tn[T_S].up || !tn[T_R].up) {
		ktap_skip_named(names[1], "no tenants");
		return;
	}
	tenant_do(&tn[T_S], 'u');
	ktap_diag("S's filler unmapped: S at %ld pages, formula level %ld",
		  cg_pages(CG_S), s_level());
	CHECK(s_level() == 0, "S still short: %ld pages", cg_pages(CG_S));
	level = wait_level(level_is, 0, STANDDOWN_SECONDS, &ok);
	if (!CHECK(ok, "pressure_level %ld after %d s, S not short", level,
		   STANDDOWN_SECONDS))
		goto out;

	/*
	 * Standing down is something that does not happen: only a window of
	 * time can show it. ksmd looks at the levels again at most once a
	 * second while it stands down (sleep max(sleep_millisecs, 1000 ms)),
	 * so a window of QUIET_SECONDS spans a few of its looks, each of
	 * which would begin a pass if it found a registered mm short: the
	 * new pairs, written first, would then merge, and full_scans would
	 * move once the pass ends. Nothing is waited for here, only seen
	 * not to happen.
	 */
	scans = ksm_read("full_scans");
	tenant_do(&tn[T_S], 'n');
	sleeps = ksmd_sleeps();
	cpu = ksmd_cpu();
	end = monotonic_seconds() + QUIET_SECONDS;
	quiet_scans = scans;
	while (monotonic_seconds() < end && quiet_scans == scans) {
		usleep(100000);
		quiet_scans = ksm_read("full_scans");
	}
	sleeps = ksmd_sleeps() - sleeps;
	cpu = ksmd_cpu() - cpu;
	ktap_diag("stood down %d s: full_scans %ld -> %ld, ksmd slept %ld times, ran %.2f s",
		  QUIET_SECONDS, scans, quiet_scans, sleeps, cpu);
	CHECK(quiet_scans == scans, "full_scans moved: %ld -> %ld", scans,
	      quiet_scans);
	/*
	 * With sleep_millisecs 0, a look a second (a sleep each, little
	 * CPU), not a busy loop of looks.
	 */
	CHECK(sleeps >= 1 && sleeps <= QUIET_SECONDS + 2,
	      "ksmd slept %ld times in %d s", sleeps, QUIET_SECONDS);
	CHECK(cpu >= 0 && cpu <= QUIET_SECONDS * 0.1,
	      "ksmd ran %.2f s of %d s", cpu, QUIET_SECONDS);
	CHECK(ksm_read("pressure_level") == 0, "pressure_level %ld",
	      ksm_read("pressure_level"));
	CHECK(pairs_apart(&tn[T_S], 1) == NPAIRS,
	      "S's new pairs: %d of %d in two frames",
	      pairs_apart(&tn[T_S], 1), NPAIRS);
	CHECK(tenant_pairs_shared(&tn[T_S], 0) == NPAIRS,
	      "S's first pairs: %d of %d still merged",
	      tenant_pairs_shared(&tn[T_S], 0), NPAIRS);
	tenant_intact(&tn[T_S]);

	/* Short again: ksmd resumes, and the new pairs merge. */
	bd[T_S].filler = 0;
	if (!fill_to(&tn[T_S], 93, 95))
		goto out;
	CHECK(ksm_wait_until(s_pairs_merged, &set1, 20),
	      "S's new pairs merge");
	ktap_diag("resumed: full_scans %ld, pressure_level %ld (formula %ld)",
		  ksm_read("full_scans"), ksm_read("pressure_level"),
		  s_level());
	tenant_intact(&tn[T_S]);
	CHECK(pairs_apart(&tn[T_R], 0) == NPAIRS,
	      "R: %d of %d pairs in two frames", pairs_apart(&tn[T_R], 0),
	      NPAIRS);
out:
	tenant_stop(&tn[T_S]);
	ktap_result(checks_passed(), "%s", names[1]);
}

/*
 * The scales tenant filled to @lo..@hi percent of S's limit: once ksmd
 * scans (pressure_level nonzero) and two more full scans have passed,
 * pressure_level is within TOL_LEVEL of the formula's value from
 * memory.current. Returns the level read, -1 if ksmd never scanned.
 */
static long level_at(int lo, int hi)
{
	long level, before, after;
	bool ok;

	if (!fill_to(&tn[T_SCALES], lo, hi))
		return -1;
	/* ksmd looks again at most once a second while it stands down. */
	level = wait_level(level_nonzero, 0, STANDDOWN_SECONDS, &ok);
	if (!CHECK(ok, "pressure_level %ld after %d s at %ld pages (formula %ld)",
		   level, STANDDOWN_SECONDS, cg_pages(CG_S), s_level())) {
		ktap_diag("full_scans %ld", ksm_read("full_scans"));
		return -1;
	}
	/*
	 * A level is read at every batch: one begun before the filler was
	 * complete, or in a pass begun then, read less. Every batch of the
	 * second pass from now began after.
	 */
	if (!CHECK(ksm_wait_scans(2), "2 full scans at %d%% to %d%%", lo, hi))
		return -1;
	before = cg_pages(CG_S);
	level = ksm_read("pressure_level");
	after = cg_pages(CG_S);
	ktap_diag("at %ld of %d pages (%ld%%): pressure_level %ld, formula %ld (%ld after)",
		  before, LIMIT_PAGES, before * 100 / LIMIT_PAGES, level,
		  formula_level(before, LIMIT_PAGES),
		  formula_level(after, LIMIT_PAGES));
	CHECK(level_near(level, formula_level(before, LIMIT_PAGES)) ||
	      level_near(level, formula_level(after, LIMIT_PAGES)),
	      "pressure_level %ld, formula %ld (within %d)", level,
	      formula_level(before, LIMIT_PAGES), TOL_LEVEL);
	return level;
}

static void test_scales(void)
{
	long low, high;

	if (!tenant_start(&tn[T_SCALES]))
		goto out;
	low = level_at(84, 86);
	if (low < 0)
		goto out;
	high = level_at(94, 96);
	CHECK(high > low, "pressure_level %ld at 95%%, %ld at 85%%", high,
	      low);
	tenant_intact(&tn[T_SCALES]);
out:
	tenant_stop(&tn[T_SCALES]);
	ktap_result(checks_passed(), "%s", names[2]);
}

static void test_off(void)
{
	if (!tn[T_R].up) {
		ktap_skip_named(names[3], "no tenant in R");
		return;
	}
	CHECK(ksm_write("pressure_only", 0) == 0, "pressure_only=0");
	CHECK(ksm_wait_until(r_pairs_merged, NULL, 20), "R's pairs merge");
	CHECK(ksm_read("pressure_level") == 0, "pressure_level %ld",
	      ksm_read("pressure_level"));
	CHECK(ksm_stat(tn[T_R].k.pid[0], "ksm_merging_pages") == 2 * NPAIRS,
	      "R: ksm_merging_pages %ld, want %d",
	      ksm_stat(tn[T_R].k.pid[0], "ksm_merging_pages"), 2 * NPAIRS);
	tenant_intact(&tn[T_R]);
	tenant_stop(&tn[T_R]);
	ktap_result(checks_passed(), "%s", names[3]);
}

static void test_bad_input(void)
{
	static const char *const bad[] = { "2", "-1", "x" };
	struct stat st = {};

	for (long v = 1; v >= 0; v--) {
		CHECK(ksm_write("pressure_only", v) == 0, "pressure_only=%ld",
		      v);
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
			CHECK(ksm_write_str("pressure_only", bad[i]) ==
			      -EINVAL && ksm_read("pressure_only") == v,
			      "\"%s\" at %ld: EINVAL, unchanged (%ld)",
			      bad[i], v, ksm_read("pressure_only"));
	}
	CHECK(stat(KSM_DIR "pressure_level", &st) == 0 &&
	      !(st.st_mode & 0222), "pressure_level read-only (mode %o)",
	      (unsigned int)st.st_mode & 0777);
	CHECK(ksm_write("pressure_level", 5) < 0 &&
	      ksm_read("pressure_level") == 0,
	      "a write to pressure_level fails, value %ld",
	      ksm_read("pressure_level"));
	ktap_result(checks_passed(), "%s", names[4]);
}

/* Why the cgroup tests cannot run, or NULL. */
static const char *cgroups_setup(void)
{
	char max[32];
	long avail = meminfo_kb("MemAvailable"), total = meminfo_kb("MemTotal");

	if (avail < 0 || total <= 0 || avail * 4 < total)
		return "the system is short of memory";
	if (memcg_create(CG_P) ||
	    write_file(CG_P "/cgroup.subtree_control", "+memory") ||
	    memcg_create(CG_S) || memcg_create(CG_R))
		return "no memory cgroups";
	snprintf(max, sizeof(max), "%ld", (long)LIMIT_PAGES * page_size);
	if (write_file(CG_S "/memory.max", max) ||
	    write_file(CG_S "/memory.high", "max"))
		return "cannot limit a memory cgroup";
	return NULL;
}

int main(void)
{
	const char *why;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (ksm_read("pressure_only") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no pressure_only (not samepage)");
	if (!CHECK(ksm_reset() == 0, "reset"))
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	bd = mmap(NULL, NR_TENANTS * sizeof(*bd), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED)
		return ktap_skip_all(names, ARRAY_SIZE(names), "mmap");
	why = cgroups_setup();
	if (why) {
		for (int i = 0; i < 4; i++)
			ktap_skip_named(names[i], why);
	} else {
		test_targets();
		test_stops_and_resumes();
		test_scales();
		test_off();
	}
	for (int t = 0; t < NR_TENANTS; t++)
		tenant_stop(&tn[t]);
	checks_passed();
	test_bad_input();
	cgroup_remove(CG_S);
	cgroup_remove(CG_R);
	cgroup_remove(CG_P);
	return ktap_finish();
}
