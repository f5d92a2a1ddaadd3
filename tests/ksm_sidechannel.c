// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_sidechannel.c - the side channel that merging opens, measured.
 *
 * A victim (uid 1000, memory cgroup ksm_sc_v) holds a secret page among
 * filler pages in mergeable memory: one of G contents, chosen at random
 * for each trial. An attacker (uid 1001, cgroup ksm_sc_a) fills G pages
 * with every candidate content, lets ksmd run a few full scans, then times
 * a write to each of its pages with the cycle counter: a page that merged
 * with the victim's takes a copy-on-write fault and is the slowest. Its
 * guess is the slowest page. Over TRIALS trials:
 *
 *   side_channel_system: merging across all processes (mainline, the
 *     default) leaks: more than CHANCE_MAX right guesses (LEAK_MIN),
 *     which chance gives with probability 6.2e-5. This holds on stock
 *     too: the test measures the leak it is about. On samepage the first
 *     write to an unmerged page that held still faults as well (ksmd
 *     write-protected it, mm/ksm/walk.c), only more cheaply than a copy
 *     on write: the gap narrows and the guesses are noisier (21 to 26
 *     of 32 here, once 14; 18 to 20 under KASAN; stock 32), but the leak
 *     stays far above chance.
 *   side_channel_{process,cgroup,user}: with merge_domain set so that the
 *     two are in different domains, the guesses are at chance: with no
 *     merge, which page is slowest is independent of the secret, so the
 *     right guesses are Binomial(TRIALS, 1/G): mean 4, and at most
 *     CHANCE_MAX = 12 but with probability 6.2e-5. The victim's and the
 *     attacker's pages never share a frame (pagemap).
 *
 * The domain settings are samepage's merge_domain file: without it only
 * the first test is planned, so stock runs just that one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksmtest.h"

#define G		8	/* candidate contents */
#define FILLER		64	/* the victim's other pages */
#define TRIALS		32
#define CHANCE_MAX	12	/* P(Binomial(32, 1/8) > 12) = 6.2e-5 */
#define LEAK_MIN	(CHANCE_MAX + 1)
#define SCANS		4	/* full scans ksmd gets a trial */
#define CG_V		CGROUP_ROOT "/ksm_sc_v"
#define CG_A		CGROUP_ROOT "/ksm_sc_a"
#define SEED		0x5c00

/* Shared between the parent and both children (MAP_SHARED, unmergeable). */
struct board {
	int trial, secret, guess;
	char *secret_page;		/* in the victim */
	char *cand[G];			/* in the attacker */
	unsigned long long cycles[G];
};

static struct board *bd;

/* Content of candidate @i in trial @t. */
static void fill_candidate(char *page, int t, int i)
{
	fill_pattern(page, SEED + t, i);
}

static int victim(int cmd_fd, int reply_fd)
{
	char *p, cmd;

	if (become_tenant(CG_V, 1000))
		return 1;
	p = map_pages(FILLER + 1);
	for (int i = 0; i < FILLER; i++)
		fill_page(p, i, SEED - 1 - getpid());
	bd->secret_page = p + FILLER * page_size;
	if (merge_pages(p, FILLER + 1))
		return 1;
	while ((cmd = kid_wait_cmd(cmd_fd)) == 't') {
		fill_candidate(bd->secret_page, bd->trial, bd->secret);
		kid_reply(reply_fd, 'o');
	}
	return 0;
}

static int attacker(int cmd_fd, int reply_fd)
{
	unsigned long long t0, t1;
	char *p, cmd;
	int best;

	if (become_tenant(CG_A, 1001))
		return 1;
	p = map_pages(G);
	for (int i = 0; i < G; i++)
		bd->cand[i] = p + i * page_size;
	if (merge_pages(p, G))
		return 1;
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		if (cmd == 'f') {
			for (int i = 0; i < G; i++)
				fill_candidate(bd->cand[i], bd->trial, i);
		} else {	/* 'm': time one write to each page */
			best = 0;
			for (int i = 0; i < G; i++) {
				t0 = cycle_count();
				*(volatile char *)(bd->cand[i] + 64) = 0x5a;
				t1 = cycle_count();
				bd->cycles[i] = t1 - t0;
				if (bd->cycles[i] > bd->cycles[best])
					best = i;
			}
			bd->guess = best;
		}
		kid_reply(reply_fd, 'o');
	}
	return 0;
}

static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	return i ? attacker(cmd_fd, reply_fd) : victim(cmd_fd, reply_fd);
}

static bool call(struct kids *k, int i, char cmd)
{
	char r = 0;

	return kid_call(k, i, cmd, &r) && r == 'o';
}

/*
 * TRIALS trials under merge_domain @domain (NULL: leave it, mainline);
 * returns the right guesses, or -1 on a failure to run them.
 */
static int trials(const char *domain, int *shared_frames)
{
	unsigned long long slow = 0, fast = 0;
	struct kids k;
	int right = 0;

	*shared_frames = 0;
	CHECK(ksm_reset() == 0, "reset");
	if (domain && !CHECK(ksm_write_str("merge_domain", domain) == 0,
			     "merge_domain=%s", domain))
		return -1;
	if (!CHECK(kids_start(&k, 2, kid, NULL) == 0, "children"))
		return -1;
	for (int t = 0; t < TRIALS; t++) {
		bd->trial = t;
		bd->secret = rand() % G;
		if (!CHECK(call(&k, 0, 't') && call(&k, 1, 'f'), "trial %d", t) ||
		    !CHECK(ksm_wait_scans(SCANS), "scans"))
			break;
		*shared_frames += pid_pfn(k.pid[0], bd->secret_page) ==
				  pid_pfn(k.pid[1], bd->cand[bd->secret]);
		if (!CHECK(call(&k, 1, 'm'), "measure"))
			break;
		right += bd->guess == bd->secret;
		slow += bd->cycles[bd->secret];
		fast += bd->cycles[(bd->secret + 1) % G];
	}
	ktap_diag("%s: %d of %d right, secret's frame shared in %d; mean cycles of a write: secret's page %llu, another %llu",
		  domain ?: "default", right, TRIALS, *shared_frames,
		  slow / TRIALS, fast / TRIALS);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	if (domain)
		ksm_write("run", 2);
	return right;
}

static void test_leak(const char *name)
{
	int shared, right = trials(NULL, &shared);

	CHECK(right >= LEAK_MIN, "%d right guesses, want %d or more", right,
	      LEAK_MIN);
	ktap_result(checks_passed(), "%s", name);
}

static void test_domain(const char *name, const char *domain)
{
	int shared, right = trials(domain, &shared);

	CHECK(right >= 0 && right <= CHANCE_MAX,
	      "%d right guesses, chance is at most %d", right, CHANCE_MAX);
	CHECK(!shared, "a frame shared across domains in %d trials", shared);
	CHECK(ksm_write("run", 2) == 0 &&
	      ksm_write_str("merge_domain", "system") == 0, "back to system");
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	static const char *const names[] = {
		"side_channel_system", "side_channel_process",
		"side_channel_cgroup", "side_channel_user",
	};

	/* Without merge_domain (stock) only the first test is there. */
	size_t tests = ksm_read_str("merge_domain", (char[64]){ 0 }, 64) ?
		       1 : ARRAY_SIZE(names);

	ksm_save_settings();
	ktap_plan(tests);
	srand(getpid());
	bd = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED || memcg_create(CG_V) || memcg_create(CG_A))
		return ktap_skip_all(names, tests, "no memory cgroups");
	test_leak(names[0]);
	if (tests > 1) {
		test_domain(names[1], "process");
		test_domain(names[2], "cgroup");
		test_domain(names[3], "user");
	}
	rmdir(CG_V);
	rmdir(CG_A);
	return ktap_finish();
}
