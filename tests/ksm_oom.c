// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_oom.c - unmerging in a memory cgroup too small for the copies.
 *
 * A child in a cgroup holds P copies of one page, merged (with the
 * parent's K copies, outside the cgroup) into a few KSM pages. The cgroup
 * is then capped a megabyte above what it uses, with no swap, so that the
 * P private copies unmerging needs cannot be charged:
 *
 *   unmergeable: the child calls MADV_UNMERGEABLE.
 *   run2:        the parent writes run=2, unmerging the child's pages too.
 *
 * Mainline ends either with an error (EAGAIN from madvise, which turns
 * ENOMEM into EAGAIN; ENOMEM from the run=2 write) or with the memcg OOM
 * killer killing the child; either is accepted, and which is reported. Whatever
 * the end: the run=2 write returns within a bound (nothing blocks forever
 * on ksmd's mutex while the child is being killed), the parent's copies
 * keep their content, no splat, and ksmd goes on: the parent's copies
 * merge again. The OOM killer's report is not a splat (scripts/ktap.sh
 * and kernel_splats() skip it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define CG	CGROUP_ROOT "/ksm_oom"
#define P	2048	/* the child's copies */
#define K	16	/* the parent's copies */
#define SEED	0x0a11
#define BOUND	120	/* seconds any step may take */

/* The child: join the cgroup, map P copies, then obey. */
static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	char *p, cmd;

	(void)arg;
	(void)i;
	if (write_file(CG "/cgroup.procs", "0"))
		return 1;
	p = map_pages(P);
	for (int j = 0; j < P; j++)
		fill_pattern(p + j * page_size, SEED, 0);
	if (merge_pages(p, P))
		return 1;
	kid_reply(reply_fd, 'r');
	while ((cmd = kid_wait_cmd(cmd_fd)) == 'u') {
		if (!madvise(p, P * page_size, MADV_UNMERGEABLE))
			kid_reply(reply_fd, 'o');
		else
			kid_reply(reply_fd, errno == EAGAIN ? 'e' : 'x');
	}
	return 0;
}

static bool all_merged(void *arg)
{
	(void)arg;
	return ksm_read("pages_shared") + ksm_read("pages_sharing") == P + K;
}

/* Cap the cgroup at what it uses plus a megabyte, without swap. */
static bool cap_cgroup(void)
{
	long cur = read_long(CG "/memory.current");
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", cur + (1L << 20));
	ktap_diag("cgroup uses %ld kB, capped at %ld kB", cur >> 10,
		  (cur >> 10) + 1024);
	return cur >= 0 && !write_file(CG "/memory.swap.max", "0") &&
	       !write_file(CG "/memory.max", buf);
}

/* Wait at most BOUND seconds for the child; its wait status or -1. */
static int wait_child(pid_t pid)
{
	double deadline = monotonic_seconds() + BOUND;
	int status;

	while (monotonic_seconds() < deadline) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * Set up the child and the parent's copies, merged, the cgroup capped.
 * Returns the parent's copies, or NULL.
 */
static char *setup(struct kids *k)
{
	char *mine, r = 0;

	CHECK(ksm_reset() == 0, "reset");
	write_file(CG "/memory.max", "max");
	if (!CHECK(kids_start(k, 1, kid, NULL) == 0, "child") ||
	    !CHECK(kids_collect(k, &r) && r == 'r', "child ready"))
		return NULL;
	mine = map_pages(K);
	for (int j = 0; j < K; j++)
		fill_pattern(mine + j * page_size, SEED, 0);
	CHECK(merge_pages(mine, K) == 0, "madvise");
	CHECK(ksm_wait_until(all_merged, NULL, 20), "all %d copies merged",
	      P + K);
	CHECK(ksm_pause() == 0 && cap_cgroup() && ksm_resume() == 0, "cap");
	return mine;
}

/* What happened, and is everything still well? */
static void check_after(const char *how, pid_t kid_pid, char *mine,
			int splats)
{
	int status = wait_child(kid_pid), bad = 0;

	CHECK(status != -1, "child gone within %d s", BOUND);
	if (status != -1)
		ktap_diag("%s: child %s %d; memory.events oom_kill %ld", how,
			  WIFSIGNALED(status) ? "killed by signal" :
			  "exited with", WIFSIGNALED(status) ?
			  WTERMSIG(status) : WEXITSTATUS(status),
			  key_value(CG "/memory.events", "oom_kill"));
	CHECK(status == -1 || WIFSIGNALED(status) ?
	      WTERMSIG(status) == SIGKILL : WEXITSTATUS(status) <= 3,
	      "child ended cleanly or by the OOM killer");
	for (int j = 0; j < K; j++)
		bad += !holds_pattern(mine + j * page_size, SEED, 0);
	CHECK(!bad, "%d of the parent's copies lost their content", bad);
	write_file(CG "/memory.max", "max");
	CHECK(ksm_reset() == 0, "run=2, run=1");
	CHECK(ksm_wait_counts(1, K - 1, 0, 0), "ksmd merges the parent's again");
	for (int j = 0; j < K; j++)
		bad += !holds_pattern(mine + j * page_size, SEED, 0);
	CHECK(!bad, "content after");
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	munmap(mine, K * page_size);
}

static void test_unmergeable(const char *name)
{
	int splats = kernel_splats();
	struct kids k;
	char *mine, r = 0;

	mine = setup(&k);
	if (mine) {
		if (kid_call(&k, 0, 'u', &r))
			ktap_diag("MADV_UNMERGEABLE: %s", r == 'o' ? "done" :
				  r == 'e' ? "EAGAIN" : "another error");
		else
			ktap_diag("MADV_UNMERGEABLE: no answer (killed)");
		CHECK(r != 'x', "no error but EAGAIN");
		kid_send(&k, 0, 'q');
		check_after("MADV_UNMERGEABLE", k.pid[0], mine, splats);
	}
	ktap_result(checks_passed(), "%s", name);
}

static void test_run2(const char *name)
{
	int splats = kernel_splats(), status;
	struct kids k;
	char *mine;
	pid_t writer;

	mine = setup(&k);
	if (mine) {
		/* The write, in a process of its own, to bound its time. */
		writer = fork();
		if (writer == 0)
			_exit(-ksm_write("run", 2) & 0xff);
		status = wait_child(writer);
		CHECK(status != -1, "run=2 returned within %d s", BOUND);
		if (status != -1)
			ktap_diag("run=2: %s", WEXITSTATUS(status) ?
				  strerror(WEXITSTATUS(status)) : "done");
		CHECK(status == -1 || !WEXITSTATUS(status) ||
		      WEXITSTATUS(status) == ENOMEM, "done or ENOMEM");
		kid_send(&k, 0, 'q');
		check_after("run=2", k.pid[0], mine, splats);
	}
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	static const char *const names[] = {
		"oom_unmergeable", "oom_run2",
	};
	struct stat st;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (memcg_create(CG) || stat(CG "/memory.swap.max", &st))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory cgroup with swap control");
	test_unmergeable(names[0]);
	test_run2(names[1]);
	rmdir(CG);
	return ktap_finish();
}
