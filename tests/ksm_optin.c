// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_optin.c - opting in whole processes without their cooperation
 * (samepage's): memory.ksm of a memory cgroup and the host-wide merge_all
 * make processes merge as if each had called prctl(PR_SET_MEMORY_MERGE,
 * 1); a process's own prctl, and memory.ksm 0, opt out. Stock has neither
 * file, and every test here skips there.
 *
 * Each child maps a region of 2N pages, page j and page N + j holding the
 * same content (the same in every child), and never calls madvise. That it
 * merges everything shows three ways: PR_GET_MEMORY_MERGE, the "mg" flag
 * of its regions in smaps (set at once), and its pages merged by ksmd
 * (ksm_merging_pages), with their content checked.
 *
 *   optin_cgroup: memory.ksm=1 in cgroup A covers a process that was in A
 *     before, one moved in after, and one forked in A after; a process in
 *     the sibling cgroup B does not merge. Back to "default": merging of
 *     new regions stops, and nothing is unmerged. Bad values: EINVAL.
 *   optin_host: merge_all=1 covers a process that never asked; one that
 *     said PR_SET_MEMORY_MERGE 0 and one in a cgroup whose memory.ksm is 0
 *     stay out. merge_all=0 stops it; bad values: EINVAL, unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE	67
#define PR_GET_MEMORY_MERGE	68
#endif

#define N		16
#define SEED		0x0b
#define SCANS		30
#define CG_A		CGROUP_ROOT "/ksm_optin_a"
#define CG_B		CGROUP_ROOT "/ksm_optin_b"
#define REGIONS		4

/* A region of 2N pages, page j and N + j alike; never madvised. */
static char *map_region(void)
{
	char *p = map_pages(2 * N);

	for (int j = 0; j < N; j++) {
		fill_page(p, j, SEED);
		fill_page(p + N * page_size, j, SEED);
	}
	return p;
}

static bool region_ok(const char *p)
{
	return !pages_wrong(p, N, SEED) &&
	       !pages_wrong(p + N * page_size, N, SEED);
}

static bool merged_self(void *unused)
{
	return self_merging_pages() >= 2 * N;
}

/* A grandchild forked where its parent merges everything: does it too? */
static int grandchild(void)
{
	char *p = map_region();

	if (prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) != 1 ||
	    mergeable_flag(p) != 1)
		return 1;
	if (!ksm_wait_until(merged_self, NULL, SCANS))
		return 2;
	return region_ok(p) ? 0 : 3;
}

static char fork_grandchild(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(grandchild());
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 'e';
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 'k' :
	       '0' + (WIFEXITED(status) ? WEXITSTATUS(status) : 9);
}

/*
 * A child: 'g' PR_GET_MEMORY_MERGE ('0'/'1'); 'v' is its newest region
 * mergeable ('y'/'n'); 'p' maps another region; 'm' are its pages merged
 * ('y'/'n'); 'c' content ('k'/'x'); 'o' PR_SET_MEMORY_MERGE 0; 'f' fork a
 * grandchild that checks itself ('k', or why not).
 */
static int kid_optin(void *arg, int i, int cmd, int reply)
{
	char *region[REGIONS] = { map_region() };
	int n = 1;
	char c;

	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		bool ok = true;

		switch (c) {
		case 'g':
			kid_reply(reply, '0' + prctl(PR_GET_MEMORY_MERGE, 0, 0,
						     0, 0));
			break;
		case 'v':
			kid_reply(reply, mergeable_flag(region[n - 1]) == 1 ?
				  'y' : 'n');
			break;
		case 'p':
			if (n < REGIONS)
				region[n++] = map_region();
			kid_reply(reply, 'k');
			break;
		case 'm':
			kid_reply(reply, merged_self(NULL) ? 'y' : 'n');
			break;
		case 'c':
			for (int j = 0; j < n; j++)
				ok = ok && region_ok(region[j]);
			kid_reply(reply, ok ? 'k' : 'x');
			break;
		case 'o':
			kid_reply(reply, prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0) ?
				  'e' : 'k');
			break;
		case 'f':
			kid_reply(reply, fork_grandchild());
			break;
		}
	}
	return 0;
}

static char ask(struct kids *k, int i, char cmd)
{
	char c;

	return kid_call(k, i, cmd, &c) ? c : '-';
}

struct kid_ref {
	struct kids *k;
	int i;
};

static bool kid_merged(void *arg)
{
	struct kid_ref *r = arg;

	return ask(r->k, r->i, 'm') == 'y';
}

static bool wait_merged(struct kids *k, int i)
{
	struct kid_ref r = { k, i };

	return ksm_wait_until(kid_merged, &r, SCANS);
}

static int move_to(const char *cg, pid_t pid)
{
	char path[256], s[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(s, sizeof(s), "%d", pid ? pid : getpid());
	return write_file(path, s);
}

static int memcg_ksm_write(const char *cg, const char *v)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.ksm", cg);
	return write_file(path, v);
}

static bool memcg_ksm_is(const char *cg, const char *v)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), "%s/memory.ksm", cg);
	return !read_file(path, buf, sizeof(buf)) && !strcmp(buf, v);
}

/* Is child @i in (@want 1) or out of (@want 0) merging everything? */
static void expect(struct kids *k, int i, int want, const char *what)
{
	char g = ask(k, i, 'g'), v = ask(k, i, 'v');

	CHECK(g == '0' + want && v == (want ? 'y' : 'n'),
	      "%s: PR_GET_MEMORY_MERGE %c, mergeable %c, want %d", what, g, v,
	      want);
}

static void test_cgroup(void)
{
	struct kids k;
	char r[3];

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, 3, kid_optin, NULL) == 0, "fork");
	CHECK(kids_collect(&k, r), "ready");
	CHECK(move_to(CG_A, k.pid[0]) == 0 && move_to(CG_B, k.pid[2]) == 0,
	      "into A and B");
	CHECK(memcg_ksm_write(CG_A, "1") == 0 && memcg_ksm_is(CG_A, "1"),
	      "A: memory.ksm=1");
	expect(&k, 0, 1, "in A before");
	expect(&k, 1, 0, "not in A yet");
	CHECK(move_to(CG_A, k.pid[1]) == 0, "into A after");
	expect(&k, 1, 1, "moved into A after");
	expect(&k, 2, 0, "in B");
	CHECK(ask(&k, 0, 'f') == 'k', "forked in A");
	CHECK(wait_merged(&k, 0) && wait_merged(&k, 1), "A's pages merged");
	CHECK(ask(&k, 2, 'm') == 'n', "B's not");
	for (int i = 0; i < 3; i++)
		CHECK(ask(&k, i, 'c') == 'k', "content %d", i);

	CHECK(memcg_ksm_write(CG_A, "2") == -EINVAL &&
	      memcg_ksm_write(CG_A, "on") == -EINVAL && memcg_ksm_is(CG_A, "1"),
	      "bad values");
	CHECK(memcg_ksm_write(CG_A, "default") == 0 &&
	      memcg_ksm_is(CG_A, "default"), "A: memory.ksm=default");
	CHECK(ask(&k, 0, 'g') == '0', "off again");
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ask(&k, 0, 'm') == 'y' && ask(&k, 0, 'c') == 'k',
	      "nothing unmerged");
	CHECK(ask(&k, 0, 'p') == 'k' && ask(&k, 0, 'v') == 'n',
	      "a new region is not mergeable");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	ktap_result(checks_passed(), "optin_cgroup");
}

static void test_host(void)
{
	struct kids k;
	char r[3];

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("merge_all", 2) == -EINVAL &&
	      ksm_read("merge_all") == 0, "merge_all=2");
	CHECK(kids_start(&k, 3, kid_optin, NULL) == 0, "fork");
	CHECK(kids_collect(&k, r), "ready");
	CHECK(ask(&k, 1, 'o') == 'k', "opt out");
	CHECK(move_to(CG_B, k.pid[2]) == 0 && memcg_ksm_write(CG_B, "0") == 0,
	      "B: memory.ksm=0");
	CHECK(ksm_write("merge_all", 1) == 0 && ksm_read("merge_all") == 1,
	      "merge_all=1");
	expect(&k, 0, 1, "never asked");
	expect(&k, 1, 0, "opted out");
	expect(&k, 2, 0, "in B");
	CHECK(ask(&k, 0, 'p') == 'k' && ask(&k, 0, 'v') == 'y',
	      "a new region is mergeable");
	CHECK(wait_merged(&k, 0), "merged");
	CHECK(ask(&k, 1, 'm') == 'n' && ask(&k, 2, 'm') == 'n',
	      "the others' not");
	for (int i = 0; i < 3; i++)
		CHECK(ask(&k, i, 'c') == 'k', "content %d", i);
	CHECK(ksm_write("merge_all", 0) == 0, "merge_all=0");
	CHECK(ask(&k, 0, 'g') == '0', "off again");
	CHECK(memcg_ksm_write(CG_B, "default") == 0, "B: default");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	ktap_result(checks_passed(), "optin_host");
}

int main(void)
{
	static const char *const names[] = { "optin_cgroup", "optin_host" };
	bool cg = memcg_create(CG_A) == 0 && memcg_create(CG_B) == 0;

	ksm_save_settings();
	if (ksm_read("merge_all") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no merge_all (not samepage)");
	ktap_plan(ARRAY_SIZE(names));
	if (cg && memcg_ksm_is(CG_A, "default"))
		test_cgroup();
	else
		ktap_skip_named("optin_cgroup", "no memory controller");
	if (cg)
		test_host();
	else
		ktap_skip_named("optin_host", "no memory controller");
	ksm_write("merge_all", 0);
	rmdir(CG_A);
	rmdir(CG_B);
	return ktap_finish();
}
