// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_observe.c - what a process learns of another's memory from its own
 * pages merging, one channel a test.
 *
 * A victim (uid 1000, memory cgroup ksm_ob_v) holds a secret: one of G
 * contents, drawn at random for each trial, in two pages (so that it is a
 * KSM page before the attacker comes, as a page of a VM image would be).
 * An attacker (uid 1001, cgroup ksm_ob_a) holds pages with candidate
 * contents, each in a mapping of its own, and guesses which content the
 * victim holds from what it sees of its own pages after ksmd's passes:
 *
 *   observe_write     the time of the first write to each candidate: a
 *                     merged page takes a copy on write;
 *   observe_pagemap   bit 56 of /proc/self/pagemap, "exclusively mapped";
 *   observe_smaps     /proc/self/smaps of each candidate's mapping: KSM:
 *                     and the Shared_ lines;
 *   observe_vmstat    cow_ksm in /proc/vmstat across a write to each;
 *   observe_pageout   pagemap's present bit after MADV_PAGEOUT of every
 *                     candidate: reclaim passes over a page another
 *                     process maps (skipped without swap);
 *   observe_move_pages move_pages(2) of each candidate to the other NUMA
 *                     node: MPOL_MF_MOVE refuses (-EACCES) a page that
 *                     another process maps (skipped with one node);
 *   observe_node      the NUMA node of each candidate (move_pages(2)
 *                     without nodes), the victim on the other node: a
 *                     page that joined the victim's KSM page moved to its
 *                     node (skipped with one node);
 *   observe_ksm_stat  ksm_merging_pages in /proc/self/ksm_stat;
 *   observe_counters  pages_sharing in /sys/kernel/mm/ksm, world-readable;
 *   observe_memcg     memory.current of its own cgroup: a page that merged
 *                     into another's is uncharged;
 *   observe_memcg_ksm_stat  ksm_merging_pages in its cgroup's
 *                     memory.ksm_stat (samepage's);
 *   observe_request   pagemap right after MADV_MERGE (samepage's) on the
 *                     candidates: no wait for ksmd at all.
 *
 * The per-page channels see every candidate at once: one round a trial.
 * The others give a count: the attacker maps half of the candidates still
 * in play in new pages each round (ksmd paused meanwhile, and its pages of
 * the round before freed and forgotten), and keeps the half whose round
 * moved the count: log2(G) rounds a trial. memory.current also moves by
 * a page now and then without a merge, on stock too, so that channel
 * guesses right less often.
 *
 * Right guesses by chance are Binomial(TRIALS, 1/G): mean 0.5, and more
 * than CHANCE_MAX with probability 1.7e-4. Each test here must guess right
 * at least LEAK_MIN times: the channel exists, and the test measures it.
 * All but the two of samepage's files and advice are mainline's channels,
 * and leak on stock too.
 *
 * Then each channel again with samepage's hide_merges set (the tests
 * named *_hidden, skipped where there is no such file): the attacker must
 * guess right CHANCE_MAX times or fewer, which chance does with
 * probability 1 - 1.7e-4, while the merges still happen: root, reading
 * both processes' pagemap, finds the attacker's candidate of the secret's
 * content in the victim's frame in three quarters of the trials whose
 * rounds mapped that candidate (every trial of a per-page channel; about
 * half of them, OFFERED_MIN at least, where halving goes astray, as it
 * must with the setting on). MADV_MERGE merges nothing under hide_merges,
 * and pages of two NUMA nodes do not merge under it, so
 * observe_request_hidden and observe_node_hidden check no merge.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef MADV_MERGE
#define MADV_MERGE	26
#endif

#define G		64	/* candidate contents */
#define FILLER		64	/* the victim's other pages */
#define TRIALS		32
#define CHANCE_MAX	4	/* P(Binomial(32, 1/64) > 4) = 1.7e-4 */
#define LEAK_MIN	(CHANCE_MAX + 1)
#define SCANS		4	/* full scans ksmd gets a round */
#define OFFERED_MIN	4	/* P(Binomial(32, 1/2) < 4) < 1e-6 */
#define CG_V		CGROUP_ROOT "/ksm_ob_v"
#define CG_A		CGROUP_ROOT "/ksm_ob_a"
#define SEED		0x0b5e

enum channel_kind {
	PER_PAGE,	/* guess() looks at every candidate */
	COUNT,		/* count() moves when a candidate merged */
};

struct channel {
	const char *name;
	enum channel_kind kind;
	/* PER_PAGE: the candidate that looks merged, from cand[0..G). */
	int (*guess)(char *const *cand);
	/* COUNT: the figure, and whether @after tells of a merge. */
	long (*count)(void);
	bool (*moved)(long before, long after);
	/* Candidates are merged by MADV_MERGE, not made mergeable. */
	bool request;
	/* The victim runs on the other NUMA node (CPU 0, node 0). */
	bool apart;
	/* Whether this kernel has the channel (NULL: mainline's, always). */
	bool (*available)(void);
};

/* Shared between the parent and both children (MAP_SHARED, unmergeable). */
struct board {
	int trial, secret, guess;
	int lo, hi;			/* COUNT: the candidates of a round */
	bool moved;			/* COUNT: the round's answer */
	const struct channel *ch;
	char *secret_at;		/* the victim's first page of it */
	char *slots;			/* the attacker's candidate slot 0 */
	int offered;			/* trials that mapped the secret's */
	int merged;			/* ... and whose candidate merged */
};

static struct board *bd;

/* Content of candidate @i in trial @t. */
static void fill_candidate(char *page, int t, int i)
{
	fill_pattern(page, SEED + t, i);
}

/* The slowest of @n timed operations: its index. */
static int slowest(const unsigned long long *t, int n)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (t[i] > t[best])
			best = i;
	return best;
}

static int guess_write(char *const *cand)
{
	unsigned long long t[G], t0;

	for (int i = 0; i < G; i++) {
		t0 = cycle_count();
		*(volatile char *)(cand[i] + 64) = 0x5a;
		t[i] = cycle_count() - t0;
	}
	return slowest(t, G);
}

#define PM_MMAP_EXCLUSIVE	(1ULL << 56)

static int guess_pagemap(char *const *cand)
{
	for (int i = 0; i < G; i++) {
		uint64_t e = pagemap_entry(0, cand[i]);

		if ((e & PM_PRESENT) && !(e & PM_MMAP_EXCLUSIVE))
			return i;
	}
	return 0;
}

static int guess_smaps(char *const *cand)
{
	for (int i = 0; i < G; i++)
		if (smaps_kb(0, cand[i], "KSM") > 0 ||
		    smaps_kb(0, cand[i], "Shared_Clean") > 0 ||
		    smaps_kb(0, cand[i], "Shared_Dirty") > 0)
			return i;
	return 0;
}

/* cow_ksm in /proc/vmstat: copies on write of KSM pages, system-wide. */
static int guess_vmstat(char *const *cand)
{
	for (int i = 0; i < G; i++) {
		long before = vmstat("cow_ksm");

		*(volatile char *)(cand[i] + 64) = 0x5a;
		if (vmstat("cow_ksm") > before)
			return i;
	}
	return 0;
}

/*
 * MADV_PAGEOUT reclaims only pages no other process maps: the candidate
 * still mapped afterwards (pagemap's present bit) is the merged one.
 */
static int guess_pageout(char *const *cand)
{
	for (int i = 0; i < G; i++)
		madvise(cand[i], page_size, MADV_PAGEOUT);
	for (int i = 0; i < G; i++)
		if (pagemap_entry(0, cand[i]) & PM_PRESENT)
			return i;
	return 0;
}

#define MPOL_MF_MOVE	(1 << 1)

/*
 * move_pages(2) with MPOL_MF_MOVE moves only pages no other process maps:
 * the candidate it refuses (-EACCES) is the merged one. Each candidate is
 * asked to go to the node it is not on, one call a candidate.
 */
static int guess_move_pages(char *const *cand)
{
	int node, status;
	void *page;

	for (int i = 0; i < G; i++) {
		page = cand[i];
		status = -1;
		if (syscall(__NR_move_pages, 0, 1, &page, NULL, &status, 0) ||
		    status < 0)
			continue;
		node = !status;
		if (!syscall(__NR_move_pages, 0, 1, &page, &node, &status,
			     MPOL_MF_MOVE) && status == -EACCES)
			return i;
	}
	return 0;
}

/*
 * The node each candidate is on: the one not on the node most of them
 * are on has joined a KSM page of the victim's node.
 */
static int guess_node(char *const *cand)
{
	int node[G], count[2] = { 0, 0 }, common;
	void *page;

	for (int i = 0; i < G; i++) {
		page = cand[i];
		node[i] = -1;
		syscall(__NR_move_pages, 0, 1, &page, NULL, &node[i], 0);
		if (node[i] == 0 || node[i] == 1)
			count[node[i]]++;
	}
	common = count[1] > count[0];
	for (int i = 0; i < G; i++)
		if (node[i] != common)
			return i;
	return 0;
}

/* Has the guest a second NUMA node with memory to move pages to? */
static bool have_two_nodes(void)
{
	return !access("/sys/devices/system/node/node1", F_OK);
}

static long count_ksm_stat(void)
{
	return ksm_stat(0, "ksm_merging_pages");
}

static long count_counters(void)
{
	return ksm_read("pages_sharing");
}

static long count_memcg(void)
{
	return read_long(CG_A "/memory.current");
}

static long count_memcg_ksm_stat(void)
{
	return key_value(CG_A "/memory.ksm_stat", "ksm_merging_pages");
}

/* Does this kernel take MADV_MERGE (samepage's)? */
static bool have_request(void)
{
	char *p = map_pages(1);
	bool ok = madvise(p, page_size, MADV_MERGE) == 0;

	munmap(p, page_size);
	return ok;
}

/* Does it have memory.ksm_stat (samepage's)? */
static bool have_memcg_ksm_stat(void)
{
	return access(CG_A "/memory.ksm_stat", R_OK) == 0;
}

static bool rose(long before, long after)
{
	return before >= 0 && after > before;
}

static bool fell(long before, long after)
{
	return before >= 0 && after >= 0 && after < before;
}

static const struct channel channels[] = {
	{ "observe_write", PER_PAGE, .guess = guess_write },
	{ "observe_pagemap", PER_PAGE, .guess = guess_pagemap },
	{ "observe_smaps", PER_PAGE, .guess = guess_smaps },
	{ "observe_vmstat", PER_PAGE, .guess = guess_vmstat },
	{ "observe_pageout", PER_PAGE, .guess = guess_pageout,
	  .available = have_swap },
	{ "observe_move_pages", PER_PAGE, .guess = guess_move_pages,
	  .available = have_two_nodes },
	{ "observe_node", PER_PAGE, .guess = guess_node, .apart = true,
	  .available = have_two_nodes },
	{ "observe_ksm_stat", COUNT, .count = count_ksm_stat, .moved = rose },
	{ "observe_counters", COUNT, .count = count_counters, .moved = rose },
	{ "observe_memcg", COUNT, .count = count_memcg, .moved = fell },
	{ "observe_memcg_ksm_stat", COUNT, .count = count_memcg_ksm_stat,
	  .moved = rose, .available = have_memcg_ksm_stat },
	{ "observe_request", PER_PAGE, .guess = guess_pagemap,
	  .request = true, .available = have_request },
};

static int victim(int cmd_fd, int reply_fd)
{
	char *p, cmd;

	/*
	 * On the attacker's CPU, so on its NUMA node (under hide_merges
	 * pages merge only within a node), but where the channel is the
	 * node itself.
	 */
	if (become_tenant(CG_V, 1000) || pin_to_cpu(0, bd->ch->apart ? 0 : 1))
		return 1;
	p = map_pages(FILLER + 2);
	for (int i = 0; i < FILLER; i++)
		fill_page(p, i, SEED - 1 - getpid());
	if (merge_pages(p, FILLER + 2))
		return 1;
	bd->secret_at = p + FILLER * page_size;
	while ((cmd = kid_wait_cmd(cmd_fd)) == 't') {
		fill_candidate(p + FILLER * page_size, bd->trial, bd->secret);
		fill_candidate(p + (FILLER + 1) * page_size, bd->trial,
			       bd->secret);
		kid_reply(reply_fd, 'o');
	}
	return 0;
}

/*
 * The attacker's pages: candidate slot i at page 2 + 2i of a region that
 * one page table maps, whose page 0 stays mapped, so that the page table
 * is not freed and allocated again between rounds; the other pages are
 * PROT_NONE, so that every candidate is a mapping of its own.
 */
struct cands {
	char *base;
	int n;
};

#define REGION_SIZE	(2UL << 20)

static int reserve_region(struct cands *c)
{
	char *p = mmap(NULL, 2 * REGION_SIZE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	c->base = (char *)(((unsigned long)p + REGION_SIZE - 1) &
			   ~(REGION_SIZE - 1));
	c->n = 0;
	return mprotect(c->base, page_size, PROT_READ | PROT_WRITE);
}

static char *slot(const struct cands *c, int i)
{
	return c->base + (2 + 2 * i) * page_size;
}

/*
 * Map candidates [@lo, @hi) of the trial, and make them mergeable, or
 * merge them by MADV_MERGE if the channel says so.
 */
static int map_candidates(struct cands *c, int lo, int hi)
{
	int advice = bd->ch->request ? MADV_MERGE : MADV_MERGEABLE;

	c->n = hi - lo;
	for (int i = 0; i < c->n; i++) {
		if (mprotect(slot(c, i), page_size, PROT_READ | PROT_WRITE))
			return -1;
		fill_candidate(slot(c, i), bd->trial, lo + i);
	}
	for (int i = 0; i < c->n; i++)
		if (madvise(slot(c, i), page_size, advice))
			return -1;
	return 0;
}

/* Free the candidates' pages; their slots go back to PROT_NONE. */
static void unmap_candidates(struct cands *c)
{
	for (int i = 0; i < c->n; i++)
		mmap(slot(c, i), page_size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		     -1, 0);
	c->n = 0;
}

static int guess_from(struct cands *c)
{
	char *page[G];

	for (int i = 0; i < c->n; i++)
		page[i] = slot(c, i);
	return bd->ch->guess(page);
}

static int attacker(int cmd_fd, int reply_fd)
{
	struct cands c;
	long before = -1;
	char *own, cmd;

	if (become_tenant(CG_A, 1001) || reserve_region(&c))
		return 1;
	/* One CPU's charge stock, for memory.current. */
	pin_to_cpu(0, 1);
	/* The mm is registered before anything is timed. */
	own = c.base;
	bd->slots = slot(&c, 0);
	fill_page(own, 0, SEED + 1);
	if (merge_pages(own, 1))
		return 1;
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		char r = 'o';

		switch (cmd) {
		case 'f':	/* PER_PAGE: map every candidate */
			if (map_candidates(&c, 0, G))
				r = 'e';
			break;
		case 'g':	/* PER_PAGE: guess */
			bd->guess = guess_from(&c);
			break;
		case 'r':	/* COUNT: map a round's candidates */
			if (map_candidates(&c, bd->lo, bd->hi))
				r = 'e';
			before = bd->ch->count();
			break;
		case 'c':	/* COUNT: did the round move the count? */
			bd->moved = bd->ch->moved(before, bd->ch->count());
			break;
		case 'u':
			unmap_candidates(&c);
			break;
		}
		kid_reply(reply_fd, r);
	}
	return 0;
}

static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	return i ? attacker(cmd_fd, reply_fd) : victim(cmd_fd, reply_fd);
}

/*
 * Root's view: does the attacker's candidate @i of the round map the
 * frame of the victim's secret? Counted once a trial, in bd->merged.
 */
static void note_merged(struct kids *k, int i)
{
	uint64_t v = pagemap_entry(k->pid[0], bd->secret_at);
	uint64_t a = pagemap_entry(k->pid[1], bd->slots + 2 * i * page_size);

	bd->offered++;
	if ((v & PM_PRESENT) && (a & PM_PRESENT) &&
	    (v & PM_PFN_MASK) == (a & PM_PFN_MASK))
		bd->merged++;
}

static bool call(struct kids *k, int i, char cmd)
{
	char r = 0;

	return kid_call(k, i, cmd, &r) && r == 'o';
}

/* One trial's guess through a PER_PAGE channel; -1 if it failed to run. */
static int guess_per_page(struct kids *k)
{
	if (!CHECK(call(k, 1, 'f'), "candidates mapped") ||
	    (!bd->ch->request && !CHECK(ksm_wait_scans(SCANS), "scans")))
		return -1;
	note_merged(k, bd->secret);
	if (!CHECK(call(k, 1, 'g'), "guess"))
		return -1;
	return bd->guess;
}

/* One trial's guess through a COUNT channel, by halving; -1 on failure. */
static int guess_by_count(struct kids *k)
{
	int lo = 0, hi = G;
	bool counted = false;

	while (hi - lo > 1) {
		bd->lo = lo;
		bd->hi = lo + (hi - lo) / 2;
		if (!CHECK(call(k, 1, 'u'), "unmapped") ||
		    !CHECK(ksm_wait_scans(SCANS), "scans") ||
		    !CHECK(ksm_pause() == 0, "run=0") ||
		    !CHECK(call(k, 1, 'r'), "round mapped") ||
		    !CHECK(ksm_resume() == 0, "run=1") ||
		    !CHECK(ksm_wait_scans(SCANS), "scans") ||
		    !CHECK(call(k, 1, 'c'), "count read"))
			return -1;
		if (bd->secret >= bd->lo && bd->secret < bd->hi && !counted) {
			note_merged(k, bd->secret - bd->lo);
			counted = true;
		}
		if (bd->moved)
			hi = bd->hi;
		else
			lo = bd->hi;
	}
	return lo;
}

/*
 * TRIALS trials through channel @ch, with hide_merges set to @hide: the
 * right guesses, or -1.
 */
static int trials(const struct channel *ch, bool hide)
{
	struct kids k;
	int right = 0, guess;

	bd->ch = ch;
	bd->offered = 0;
	bd->merged = 0;
	if (!CHECK(ksm_reset() == 0, "reset") ||
	    (hide && !CHECK(ksm_write("run", 2) == 0 &&
			    ksm_write("hide_merges", 1) == 0 &&
			    ksm_write("run", 1) == 0, "hide_merges on")) ||
	    !CHECK(kids_start(&k, 2, kid, NULL) == 0, "children"))
		return -1;
	for (int t = 0; t < TRIALS; t++) {
		bd->trial = t;
		bd->secret = rand() % G;
		if (!CHECK(call(&k, 0, 't'), "trial %d", t) ||
		    !CHECK(ksm_wait_scans(SCANS), "the victim's pages merge"))
			break;
		guess = ch->kind == PER_PAGE ? guess_per_page(&k) :
					       guess_by_count(&k);
		if (guess < 0 || !CHECK(call(&k, 1, 'u'), "unmapped"))
			break;
		right += guess == bd->secret;
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_diag("%s%s: %d of %d right, %d of %d merged", ch->name,
		  hide ? "_hidden" : "", right, TRIALS, bd->merged, bd->offered);
	if (hide)
		CHECK(ksm_write("run", 2) == 0 &&
		      ksm_write("hide_merges", 0) == 0 &&
		      ksm_write("run", 1) == 0, "hide_merges off");
	return checks_passed_so_far() ? right : -1;
}

static void test_leak(const struct channel *ch)
{
	int right = trials(ch, false);

	CHECK(right >= LEAK_MIN, "%d right guesses, want %d or more", right,
	      LEAK_MIN);
	ktap_result(checks_passed(), "%s", ch->name);
}

static void test_hidden(const struct channel *ch)
{
	int right = trials(ch, true);

	CHECK(right >= 0 && right <= CHANCE_MAX,
	      "%d right guesses, want %d or fewer", right, CHANCE_MAX);
	if (!ch->request && !ch->apart)
		CHECK(bd->offered >= OFFERED_MIN &&
		      4 * bd->merged >= 3 * bd->offered,
		      "%d of %d trials merged, want three quarters of %d or more",
		      bd->merged, bd->offered, OFFERED_MIN);
	ktap_result(checks_passed(), "%s_hidden", ch->name);
}

/* The name of channel @i's test with hide_merges set. */
static const char *hidden_name(size_t i)
{
	static char name[64];

	snprintf(name, sizeof(name), "%s_hidden", channels[i].name);
	return name;
}

int main(void)
{
	bool hide = ksm_read("hide_merges") >= 0;

	ksm_save_settings();
	ktap_plan(2 * ARRAY_SIZE(channels));
	srand(getpid());
	bd = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED || memcg_create(CG_V) || memcg_create(CG_A)) {
		for (size_t i = 0; i < ARRAY_SIZE(channels); i++) {
			ktap_skip_named(channels[i].name, "no memory cgroups");
			ktap_skip_named(hidden_name(i), "no memory cgroups");
		}
		return ktap_finish();
	}
	for (size_t i = 0; i < ARRAY_SIZE(channels); i++) {
		if (channels[i].available && !channels[i].available())
			ktap_skip_named(channels[i].name, "not here");
		else
			test_leak(&channels[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(channels); i++) {
		if (!hide)
			ktap_skip_named(hidden_name(i), "no hide_merges");
		else if (channels[i].available && !channels[i].available())
			ktap_skip_named(hidden_name(i), "not here");
		else
			test_hidden(&channels[i]);
	}
	ksm_write("run", 2);
	cgroup_remove(CG_V);
	cgroup_remove(CG_A);
	return ktap_finish();
}
