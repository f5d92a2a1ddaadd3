// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_memcg.c - memory.ksm_stat, KSM's figures per memory cgroup: each
 * cgroup's file holds the sums of /proc/PID/ksm_stat over its processes and
 * those of its descendants, through fork, a task moving between cgroups,
 * exit and run=2, and the cgroups' figures add up to the global counters.
 *
 * Layout: cgroup P with children A and B. Process PA in A maps 64 pages of
 * one content and 16 of a content that PB also has; PB in B maps 32 pages
 * of another content, those 16 and 8 zero pages (use_zero_pages=1). So A
 * has 80 merging pages, B 48 and 8 zero pages: three KSM pages with 128
 * mappings, pages_shared + pages_sharing = 128.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define CG_P CGROUP_ROOT "/ksm_memcg"
#define CG_A CG_P "/a"
#define CG_B CG_P "/b"

#define N_OWN_A 64	/* PA: pattern (51, 0) */
#define N_BOTH 16	/* PA and PB: pattern (53, 0) */
#define N_OWN_B 32	/* PB: pattern (52, 0) */
#define N_ZERO 8	/* PB: zeroes */

/* The figures of one cgroup or process, as the file names them. */
struct figs {
	long rmap_items, zero_pages, merging_pages, profit;
};

static void cg_figs(const char *cg, struct figs *f)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.ksm_stat", cg);
	f->rmap_items = key_value(path, "ksm_rmap_items");
	f->zero_pages = key_value(path, "ksm_zero_pages");
	f->merging_pages = key_value(path, "ksm_merging_pages");
	f->profit = key_value(path, "ksm_profit");
}

static void pid_figs(pid_t pid, struct figs *f)
{
	f->rmap_items = ksm_stat(pid, "ksm_rmap_items");
	f->zero_pages = ksm_stat(pid, "ksm_zero_pages");
	f->merging_pages = ksm_stat(pid, "ksm_merging_pages");
	f->profit = ksm_stat(pid, "ksm_process_profit");
}

static void figs_add(struct figs *sum, const struct figs *f)
{
	sum->rmap_items += f->rmap_items;
	sum->zero_pages += f->zero_pages;
	sum->merging_pages += f->merging_pages;
	sum->profit += f->profit;
}

/* Does cgroup @cg hold exactly @want? Reports every figure that differs. */
static bool cg_equals(const char *cg, const struct figs *want)
{
	struct figs got;

	cg_figs(cg, &got);
	CHECK(got.rmap_items == want->rmap_items, "%s ksm_rmap_items %ld, want %ld",
	      cg, got.rmap_items, want->rmap_items);
	CHECK(got.zero_pages == want->zero_pages, "%s ksm_zero_pages %ld, want %ld",
	      cg, got.zero_pages, want->zero_pages);
	CHECK(got.merging_pages == want->merging_pages,
	      "%s ksm_merging_pages %ld, want %ld", cg, got.merging_pages,
	      want->merging_pages);
	CHECK(got.profit == want->profit, "%s ksm_profit %ld, want %ld",
	      cg, got.profit, want->profit);
	return checks_passed_so_far();
}

/* Sum of the figures of the processes @pids. */
static void pids_figs(const pid_t *pids, int n, struct figs *sum)
{
	struct figs f;

	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < n; i++) {
		pid_figs(pids[i], &f);
		figs_add(sum, &f);
	}
}

static int join(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return write_file(path, "0");
}

struct area {
	char *p;
	int own, both, zero;
	unsigned int seed;
};

static void area_fill(struct area *a)
{
	int n = a->own + a->both + a->zero;

	a->p = map_pages(n);
	for (int i = 0; i < a->own; i++)
		fill_pattern(a->p + i * page_size, a->seed, 0);
	for (int i = a->own; i < a->own + a->both; i++)
		fill_pattern(a->p + i * page_size, 53, 0);
}

static bool area_intact(const struct area *a)
{
	const char *z;
	int i;

	for (i = 0; i < a->own; i++)
		if (!holds_pattern(a->p + i * page_size, a->seed, 0))
			return false;
	for (; i < a->own + a->both; i++)
		if (!holds_pattern(a->p + i * page_size, 53, 0))
			return false;
	for (; i < a->own + a->both + a->zero; i++)
		for (z = a->p + i * page_size; z < a->p + (i + 1) * page_size; z++)
			if (*z)
				return false;
	return true;
}

/* A forked child of PA: waits on @fd, then exits 0 if its pages are intact. */
static void grandchild(const struct area *a, int fd)
{
	char c;

	while (read(fd, &c, 1) < 0)
		;
	_exit(area_intact(a) ? 0 : 1);
}

/*
 * Kid 0 is PA, kid 1 is PB. Commands: 'c' checks content ('k' or 'x');
 * 'f' (PA) forks a grandchild that stays in A; 'e' (PA) makes the
 * grandchild check its content and exit, replying 'k' if it was intact.
 */
static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	struct area a = i == 0 ?
		(struct area){ .own = N_OWN_A, .both = N_BOTH, .seed = 51 } :
		(struct area){ .own = N_OWN_B, .both = N_BOTH, .zero = N_ZERO,
			       .seed = 52 };
	pid_t gc = 0;
	int gp[2] = { -1, -1 };
	int status;
	char cmd;

	if (join(i == 0 ? CG_A : CG_B))
		return 1;
	area_fill(&a);
	if (merge_pages(a.p, a.own + a.both + a.zero))
		return 1;
	kid_reply(reply_fd, 'r');
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q' && cmd != 3) {
		switch (cmd) {
		case 'c':
			kid_reply(reply_fd, area_intact(&a) ? 'k' : 'x');
			break;
		case 'f':
			if (pipe(gp) || (gc = fork()) < 0) {
				kid_reply(reply_fd, 'x');
				break;
			}
			if (gc == 0) {
				close(gp[1]);
				grandchild(&a, gp[0]);
			}
			close(gp[0]);
			kid_reply(reply_fd, 'k');
			break;
		case 'e':
			if (write(gp[1], "e", 1) != 1 || waitpid(gc, &status, 0) != gc)
				status = -1;
			close(gp[1]);
			kid_reply(reply_fd, status == 0 ? 'k' : 'x');
			break;
		default:
			kid_reply(reply_fd, '?');
		}
	}
	return 0;
}

static struct kids kids;
static pid_t grand;

static bool both_merged(void *arg)
{
	return ksm_stat(kids.pid[0], "ksm_merging_pages") == N_OWN_A + N_BOTH &&
	       ksm_stat(kids.pid[1], "ksm_merging_pages") == N_OWN_B + N_BOTH &&
	       ksm_stat(kids.pid[1], "ksm_zero_pages") == N_ZERO;
}

static bool grand_merged(void *arg)
{
	return ksm_stat(grand, "ksm_merging_pages") == N_OWN_A + N_BOTH;
}

/* Each cgroup's figures against its processes', P's against A's and B's. */
static void check_tree(const pid_t *in_a, int na, const pid_t *in_b, int nb)
{
	struct figs a, b, p;

	pids_figs(in_a, na, &a);
	pids_figs(in_b, nb, &b);
	p = a;
	figs_add(&p, &b);
	cg_equals(CG_A, &a);
	cg_equals(CG_B, &b);
	cg_equals(CG_P, &p);
	/* Every KSM mapping of the system is in one of these processes. */
	CHECK(ksm_read("pages_shared") + ksm_read("pages_sharing") ==
	      p.merging_pages, "pages_shared %ld + pages_sharing %ld, cgroups %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      p.merging_pages);
	CHECK(ksm_read("ksm_zero_pages") == p.zero_pages,
	      "ksm_zero_pages %ld, cgroups %ld", ksm_read("ksm_zero_pages"),
	      p.zero_pages);
}

static void check_content(void)
{
	char r = 0;

	for (int i = 0; i < 2; i++)
		CHECK(kid_call(&kids, i, 'c', &r) && r == 'k',
		      "kid %d content (%c)", i, r);
}

static void test_figures(void)
{
	struct figs a, b;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("use_zero_pages", 1) == 0, "use_zero_pages=1");
	CHECK(kids_start(&kids, 2, kid, NULL) == 0, "fork");
	CHECK(kids_collect(&kids, NULL), "ready");
	CHECK(ksm_wait_until(both_merged, NULL, 20), "merged");
	CHECK(ksm_pause() == 0, "run=0");
	check_tree(&kids.pid[0], 1, &kids.pid[1], 1);
	cg_figs(CG_A, &a);
	cg_figs(CG_B, &b);
	ktap_diag("A: merging %ld zero %ld rmap_items %ld profit %ld; B: merging %ld zero %ld rmap_items %ld profit %ld",
		  a.merging_pages, a.zero_pages, a.rmap_items, a.profit,
		  b.merging_pages, b.zero_pages, b.rmap_items, b.profit);
	CHECK(a.merging_pages == N_OWN_A + N_BOTH, "A merging %ld",
	      a.merging_pages);
	CHECK(a.rmap_items >= N_OWN_A + N_BOTH, "A rmap_items %ld", a.rmap_items);
	check_content();
	CHECK(ksm_resume() == 0, "run=1");
	ktap_result(checks_passed(), "cgroup_figures_sum_their_processes");
}

/* The pid in A that is not PA: the grandchild. */
static pid_t find_grandchild(void)
{
	char buf[256], *s, *save = NULL;
	pid_t pid;

	if (read_file(CG_A "/cgroup.procs", buf, sizeof(buf)))
		return 0;
	for (s = strtok_r(buf, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
		pid = atoi(s);
		if (pid > 0 && pid != kids.pid[0])
			return pid;
	}
	return 0;
}

static void test_fork_move_exit(void)
{
	pid_t a2[2], b2[2];
	char r = 0, buf[32];

	CHECK(kid_call(&kids, 0, 'f', &r) && r == 'k', "fork in A (%c)", r);
	grand = find_grandchild();
	CHECK(grand > 0, "grandchild in A");
	CHECK(ksm_wait_until(grand_merged, NULL, 20), "grandchild merged");
	CHECK(ksm_wait_scans(1), "scan");
	CHECK(ksm_pause() == 0, "run=0");
	a2[0] = kids.pid[0];
	a2[1] = grand;
	check_tree(a2, 2, &kids.pid[1], 1);

	/* Move the grandchild to B: its figures go with it. */
	snprintf(buf, sizeof(buf), "%d", grand);
	CHECK(write_file(CG_B "/cgroup.procs", buf) == 0, "move to B");
	b2[0] = kids.pid[1];
	b2[1] = grand;
	check_tree(&kids.pid[0], 1, b2, 2);

	/* It exits: B holds PB's figures alone. */
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(kid_call(&kids, 0, 'e', &r) && r == 'k', "grandchild content (%c)", r);
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_pause() == 0, "run=0");
	check_tree(&kids.pid[0], 1, &kids.pid[1], 1);
	check_content();
	CHECK(ksm_resume() == 0, "run=1");
	ktap_result(checks_passed(), "cgroup_figures_through_fork_move_exit");
}

static void test_unmerge_all(void)
{
	struct figs zero = {};

	CHECK(ksm_write("run", 2) == 0, "run=2");
	cg_equals(CG_A, &zero);
	cg_equals(CG_B, &zero);
	cg_equals(CG_P, &zero);
	check_content();
	kids_send(&kids, 'q');
	CHECK(kids_wait(&kids), "kids exit");
	ktap_result(checks_passed(), "cgroup_figures_after_run_2");
}

int main(void)
{
	static const char *const names[] = {
		"cgroup_figures_sum_their_processes",
		"cgroup_figures_through_fork_move_exit",
		"cgroup_figures_after_run_2",
	};
	int err;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	err = memcg_create(CG_P);
	if (!err)
		err = write_file(CG_P "/cgroup.subtree_control", "+memory");
	if (!err)
		err = memcg_create(CG_A) ?: memcg_create(CG_B);
	if (err)
		return ktap_skip_all(names, ARRAY_SIZE(names), "no memory cgroups");
	if (access(CG_A "/memory.ksm_stat", R_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory.ksm_stat (not samepage)");
	test_figures();
	test_fork_move_exit();
	test_unmerge_all();
	rmdir(CG_A);
	rmdir(CG_B);
	rmdir(CG_P);
	return ktap_finish();
}
