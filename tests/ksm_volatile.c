// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_volatile.c - pages whose content keeps changing are not merged: two
 * copies of the same pages, rewritten (identically) between every two full
 * scans, stay out of both trees and count as pages_volatile; once the
 * writing stops they merge. ksmd runs in step mode, one full scan when
 * asked, so "between scans" is exact rather than a race.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define N 32
#define ROUNDS 6
#define SEED 50

static void fill_gen(char *p, int gen)
{
	for (int i = 0; i < N; i++)
		fill_page(p, i, SEED + gen);
}

/* The pages changed since the last scan: none may be in any tree. */
static void check_volatile(int round, long merging)
{
	struct ksm_counts c;

	ksm_get_counts(&c);
	CHECK(c.shared == 0 && c.sharing == 0 && c.unshared == 0 &&
	      c.volatile_ == 2 * N,
	      "round %d: shared %ld sharing %ld unshared %ld volatile %ld",
	      round, c.shared, c.sharing, c.unshared, c.volatile_);
	CHECK(merging == 0, "round %d: ksm_merging_pages %ld", round, merging);
}

/* Once the content holds still, the two copies merge. */
static void check_merges(void)
{
	struct ksm_counts c;

	for (int i = 0; i < 3 && ksm_read("pages_shared") != N; i++)
		if (!CHECK(ksm_step(), "scan"))
			break;
	ksm_get_counts(&c);
	CHECK(c.shared == N && c.sharing == N && c.unshared == 0 &&
	      c.volatile_ == 0,
	      "still: shared %ld sharing %ld unshared %ld volatile %ld",
	      c.shared, c.sharing, c.unshared, c.volatile_);
}

/* Two regions of one process. */
static void test_two_regions(void)
{
	char *a = map_pages(N), *b = map_pages(N);
	int gen = 0;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_step_mode() == 0, "step mode");
	fill_gen(a, gen);
	fill_gen(b, gen);
	CHECK(merge_pages(a, N) == 0 && merge_pages(b, N) == 0, "madvise");
	for (int r = 0; r < ROUNDS; r++) {
		if (!CHECK(ksm_step(), "scan"))
			break;
		check_volatile(r, self_merging_pages());
		gen++;
		fill_gen(a, gen);
		fill_gen(b, gen);
	}
	check_merges();
	CHECK(self_merging_pages() == 2 * N, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(pages_wrong(a, N, SEED + gen) == 0, "content a");
	CHECK(pages_wrong(b, N, SEED + gen) == 0, "content b");
	munmap(a, N * page_size);
	munmap(b, N * page_size);
	ktap_result(checks_passed(), "volatile_two_regions_not_merged");
}

/*
 * A child's region: 'w' rewrites it with the next generation, 'c' checks
 * it, 'm' reports ksm_merging_pages ('0', 'N' or '?'); each replies.
 */
static int kid_writer(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(N);
	long merging;
	int gen = 0;
	char c;

	fill_gen(p, gen);
	if (merge_pages(p, N))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		switch (c) {
		case 'w':
			fill_gen(p, ++gen);
			kid_reply(reply, 'k');
			break;
		case 'c':
			kid_reply(reply, pages_wrong(p, N, SEED + gen) ?
				  'x' : 'k');
			break;
		case 'm':
			merging = self_merging_pages();
			kid_reply(reply, merging == 0 ? '0' :
				  merging == N ? 'N' : '?');
			break;
		}
	}
	return 0;
}

static long kids_merging(struct kids *k)
{
	char replies[2];
	long sum = 0;

	if (!kids_sync(k, 'm', replies))
		return -1;
	for (int i = 0; i < 2; i++)
		sum += replies[i] == 'N' ? N : replies[i] == '0' ? 0 : 1000;
	return sum;
}

/* The same region in two processes. */
static void test_two_processes(void)
{
	char replies[2];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_step_mode() == 0, "step mode");
	CHECK(kids_start(&k, 2, kid_writer, NULL) == 0, "fork");
	CHECK(kids_collect(&k, NULL), "ready");
	for (int r = 0; r < ROUNDS; r++) {
		if (!CHECK(ksm_step(), "scan"))
			break;
		check_volatile(r, kids_merging(&k));
		CHECK(kids_sync(&k, 'w', NULL), "rewrite");
	}
	check_merges();
	CHECK(kids_merging(&k) == 2 * N, "ksm_merging_pages");
	CHECK(kids_sync(&k, 'c', replies), "check");
	for (int i = 0; i < 2; i++)
		CHECK(replies[i] == 'k', "child %d content (%c)", i, replies[i]);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "volatile_two_processes_not_merged");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(2);
	test_two_regions();
	test_two_processes();
	/* Leave step mode. */
	ksm_reset();
	return ktap_finish();
}
