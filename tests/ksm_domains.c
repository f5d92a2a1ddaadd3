// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_domains.c - merge domains (/sys/kernel/mm/ksm/merge_domain) and
 * fresh pages (use_fresh_pages), samepage's defences against the side
 * channel and the placement attacks that merging opens.
 *
 * Four processes run the clones workload: each maps NPAGES pages holding
 * NCONT contents, every content twice. Processes 0 and 1 are uid 1000 in
 * memory cgroup ksm_dom_a, processes 2 and 3 uid 1001 in ksm_dom_b. Under
 * each setting every domain merges its own pages fully and no further:
 *
 *   system    one domain: NCONT KSM pages for all four
 *   cgroup    two (a, b): 2 * NCONT
 *   user      two (1000, 1001): 2 * NCONT
 *   process   four: 4 * NCONT
 *
 * checked through the counters, every page's content, and the frames
 * (pagemap): two pages share a frame exactly when they are of one domain
 * and one content. Each domain's saving (its mappings of KSM pages less
 * its KSM pages) adds up to pages_sharing. domains_system is mainline's
 * behaviour and runs on stock too; the others need samepage's files.
 *
 *   domains_change: merge_domain cannot change while pages are merged
 *     (EBUSY, value and content unchanged), takes bad values with EINVAL,
 *     and changes after run=2, after which merging resumes per process.
 *   domains_views: memory.ksm_stat of a cgroup holding another user's
 *     processes is refused to an unprivileged reader (EACCES), under a
 *     private setting and under "system"; its own is not; /proc/PID/ksm_stat
 *     of another user is refused as in mainline.
 *   domains_stat_access: cgroups t/a (uid 1000) and t/b (uid 1001),
 *     merging under "cgroup": a tenant of t/a may read t/a's figures but
 *     not t/b's, nor t's, which sum t/b's with its own (subtracting would
 *     give t/b's); a file opened as uid 1000 and read as root is still
 *     refused (the opener's credentials count); root reads every one.
 *   fresh_pages: with use_fresh_pages=1 no KSM page is in the frame of a
 *     page that merged into it; content, copy on write, MADV_UNMERGEABLE
 *     and run=2 behave as without it.
 *   fresh_pages_cap: max_kernel_pages still caps the KSM pages.
 *   fresh_pages_at_limit: a process holding pairs of equal pages in a
 *     memory cgroup at its limit, without swap, nothing in it to reclaim:
 *     with use_fresh_pages=1 its pairs merge, and the charge of the new
 *     frames invokes no OOM killer (memory.events oom_kill stays 0); the
 *     process lives and its content holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define NPROC		4
#define NPAGES		32
#define NCONT		16		/* page j holds content j % NCONT */
#define SEED		0xd0
#define SCANS		20
#define CG_A		CGROUP_ROOT "/ksm_dom_a"
#define CG_B		CGROUP_ROOT "/ksm_dom_b"
#define CG_T		CGROUP_ROOT "/ksm_dom_t"
#define CG_TA		CG_T "/a"
#define CG_TB		CG_T "/b"
#define CG_LIM		CGROUP_ROOT "/ksm_dom_lim"
#define CG_DRAIN	CGROUP_ROOT "/ksm_dom_drain"
#define STAT		"/memory.ksm_stat"
#define NPAIRS		256

/* Where child i runs and as whom. */
struct tenancy {
	const char *cg[NPROC];
	uid_t uid[NPROC];
};

static const struct tenancy flat = {
	{ CG_A, CG_A, CG_B, CG_B }, { 1000, 1000, 1001, 1001 }
};
static const struct tenancy nested = {
	{ CG_TA, CG_TA, CG_TB, CG_TB }, { 1000, 1000, 1001, 1001 }
};

/* Shared by the parent and the children (MAP_SHARED, never merged). */
struct board {
	char *base[NPROC];
	char path[128];		/* what 'r' reads */
	int write_page;		/* what 'w' writes */
};

static struct board *bd;

static bool pages_right(char *p, int written)
{
	for (int j = 0; j < NPAGES; j++)
		if (!holds_pattern(p + j * page_size,
				   j == written ? SEED + 1 : SEED, j % NCONT))
			return false;
	return true;
}

/* Try to read bd->path: 'o' if it could, 'p' EPERM, 'a' EACCES, 'e'. */
static char try_read(void)
{
	char buf[512];
	int fd = open(bd->path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return errno == EACCES ? 'a' : errno == EPERM ? 'p' : 'e';
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n >= 0)
		return 'o';
	return errno == EPERM ? 'p' : errno == EACCES ? 'a' : 'e';
}

/*
 * Child @i, a tenant as @arg (a struct tenancy, &flat if NULL) says:
 * commands 'c' check content, 'w' write page bd->write_page,
 * 'u' MADV_UNMERGEABLE, 'r' try to read bd->path, 'q' quit.
 */
static int clone_kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	const struct tenancy *t = arg ? arg : &flat;
	int written = -1;
	char *p, cmd;

	if (become_tenant(t->cg[i], t->uid[i]))
		return 1;
	p = map_pages(NPAGES);
	for (int j = 0; j < NPAGES; j++)
		fill_pattern(p + j * page_size, SEED, j % NCONT);
	bd->base[i] = p;
	if (merge_pages(p, NPAGES))
		return 1;
	kid_reply(reply_fd, 'o');
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		char r = 'o';

		if (cmd == 'c') {
			r = pages_right(p, written) ? 'o' : 'x';
		} else if (cmd == 'w') {
			written = bd->write_page;
			fill_pattern(p + written * page_size, SEED + 1,
				     written % NCONT);
		} else if (cmd == 'u') {
			r = madvise(p, NPAGES * page_size, MADV_UNMERGEABLE) ?
			    'x' : 'o';
		} else if (cmd == 'r') {
			r = try_read();
		}
		kid_reply(reply_fd, r);
	}
	return 0;
}

static bool all_say(struct kids *k, int n, char cmd, char want)
{
	for (int i = 0; i < n; i++) {
		char r = 0;

		if (!kid_call(k, i, cmd, &r) || r != want)
			return false;
	}
	return true;
}

struct counts_want {
	long shared, sharing;
};

static bool counts_are(void *arg)
{
	struct counts_want *w = arg;

	return ksm_read("pages_shared") == w->shared &&
	       ksm_read("pages_sharing") == w->sharing;
}

/* Wait until pages_shared is @shared, with @n children mapping NPAGES. */
static bool clones_merged(int n, long shared)
{
	struct counts_want want = { shared, n * NPAGES - shared };

	return CHECK(ksm_wait_until(counts_are, &want, SCANS),
		     "pages_shared %ld pages_sharing %ld, want %ld and %ld",
		     ksm_read("pages_shared"), ksm_read("pages_sharing"),
		     want.shared, want.sharing);
}

/* Start @n clone children as @t says and wait until they merged. */
static bool clones_merge_as(struct kids *k, const struct tenancy *t, int n,
			    long shared)
{
	char r[NPROC];

	if (!CHECK(kids_start(k, n, clone_kid, (void *)t) == 0, "children") ||
	    !CHECK(kids_collect(k, r), "children ready"))
		return false;
	return clones_merged(n, shared);
}

/* Start @n clone children and wait until they merged into @shared pages. */
static bool clones_merge(struct kids *k, int n, long shared)
{
	return clones_merge_as(k, &flat, n, shared);
}

/* The domain of child @i under @setting. */
static int domain_of(const char *setting, int i)
{
	if (!strcmp(setting, "system"))
		return 0;
	if (!strcmp(setting, "process"))
		return i;
	return i / 2;
}

/*
 * Frames: pages of one domain and one content share one, and no other
 * page has it. Then each domain's saving adds up to pages_sharing.
 */
static void check_frames(struct kids *k, const char *setting)
{
	static unsigned long pfn[NPROC][NPAGES];
	long frames = 0, saved = 0, merging[NPROC] = { 0 };
	int bad = 0;

	for (int i = 0; i < NPROC; i++)
		for (int j = 0; j < NPAGES; j++)
			pfn[i][j] = pid_pfn(k->pid[i], bd->base[i] + j * page_size);
	for (int i = 0; i < NPROC; i++) {
		for (int j = 0; j < NPAGES; j++) {
			bool first = true;

			for (int x = 0; x < NPROC; x++) {
				for (int y = 0; y < NPAGES; y++) {
					bool same = pfn[x][y] == pfn[i][j];
					bool want = domain_of(setting, x) ==
						    domain_of(setting, i) &&
						    y % NCONT == j % NCONT;

					bad += same != want;
					if (same && (x < i || (x == i && y < j)))
						first = false;
				}
			}
			frames += first;
		}
	}
	CHECK(bad == 0 && pfn[0][0], "%d page pairs share a frame wrongly", bad);
	for (int i = 0; i < NPROC; i++)
		merging[domain_of(setting, i)] +=
			ksm_stat(k->pid[i], "ksm_merging_pages");
	/* Each domain: its mappings less its KSM pages (NCONT of them). */
	for (int d = 0; d < NPROC; d++)
		if (merging[d])
			saved += merging[d] - NCONT;
	CHECK(frames == ksm_read("pages_shared"), "%ld frames, pages_shared %ld",
	      frames, ksm_read("pages_shared"));
	CHECK(saved == ksm_read("pages_sharing"),
	      "domains save %ld pages, pages_sharing %ld", saved,
	      ksm_read("pages_sharing"));
}

static void test_clones(const char *setting)
{
	int domains = !strcmp(setting, "system") ? 1 :
		      !strcmp(setting, "process") ? NPROC : 2;
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	if (strcmp(setting, "system"))
		CHECK(ksm_write_str("merge_domain", setting) == 0,
		      "merge_domain=%s", setting);
	if (clones_merge(&k, NPROC, (long)domains * NCONT)) {
		CHECK(all_say(&k, NPROC, 'c', 'o'), "content");
		check_frames(&k, setting);
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	/* Stock has no merge_domain: it runs the "system" case only. */
	if (strcmp(setting, "system"))
		CHECK(ksm_write_str("merge_domain", "system") == 0,
		      "back to system");
	ktap_result(checks_passed(), "domains_%s", setting);
}

static bool domain_is(const char *want)
{
	char buf[128], br[64];

	snprintf(br, sizeof(br), "[%s]", want);
	return ksm_read_str("merge_domain", buf, sizeof(buf)) == 0 &&
	       strstr(buf, br);
}

static void test_change(void)
{
	struct kids k;
	int err;

	CHECK(ksm_reset() == 0, "reset");
	if (clones_merge(&k, 1, NCONT)) {
		err = ksm_write_str("merge_domain", "process");
		CHECK(err == -EBUSY, "change while merged: %d, want EBUSY", err);
		CHECK(domain_is("system"), "setting kept");
		err = ksm_write_str("merge_domain", "system");
		CHECK(err == 0, "same value while merged: %d", err);
		err = ksm_write_str("merge_domain", "tenant");
		CHECK(err == -EINVAL, "bad value: %d, want EINVAL", err);
		CHECK(domain_is("system"), "setting kept");
		CHECK(ksm_read("pages_shared") == NCONT, "still merged");
		CHECK(all_say(&k, 1, 'c', 'o'), "content while merged");
		CHECK(ksm_write("run", 2) == 0, "run=2");
		CHECK(all_say(&k, 1, 'c', 'o'), "content unmerged");
		err = ksm_write_str("merge_domain", "process");
		CHECK(err == 0 && domain_is("process"), "change unmerged: %d",
		      err);
		CHECK(ksm_write("run", 1) == 0, "run=1");
		{
			struct counts_want want = { NCONT, NPAGES - NCONT };

			CHECK(ksm_wait_until(counts_are, &want, SCANS),
			      "merged again in one process");
		}
		CHECK(all_say(&k, 1, 'c', 'o'), "content merged again");
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	CHECK(ksm_write("run", 2) == 0 &&
	      ksm_write_str("merge_domain", "system") == 0, "back to system");
	ktap_result(checks_passed(), "domains_change");
}

/* Child @i reads @path: its answer (see try_read()). */
static char kid_reads(struct kids *k, int i, const char *path)
{
	char r = 0;

	snprintf(bd->path, sizeof(bd->path), "%s", path);
	kid_call(k, i, 'r', &r);
	return r;
}

static void test_views(void)
{
	const char *other = CG_A STAT, *own = CG_B STAT;
	char proc[64];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write_str("merge_domain", "cgroup") == 0, "merge_domain");
	if (clones_merge(&k, 3, 2 * NCONT)) {
		snprintf(proc, sizeof(proc), "/proc/%d/ksm_stat", k.pid[0]);
		CHECK(kid_reads(&k, 2, other) == 'a', "other cgroup's ksm_stat");
		CHECK(kid_reads(&k, 2, own) == 'o', "own cgroup's ksm_stat");
		CHECK(kid_reads(&k, 2, proc) == 'a', "other user's ksm_stat");
		CHECK(key_value(other, "ksm_merging_pages") == 2 * NPAGES,
		      "root reads every cgroup's: %ld",
		      key_value(other, "ksm_merging_pages"));
		CHECK(ksm_write("run", 2) == 0 &&
		      ksm_write_str("merge_domain", "system") == 0, "system");
		CHECK(kid_reads(&k, 2, other) == 'a',
		      "other cgroup's ksm_stat under system");
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ksm_write("run", 2);
	ktap_result(checks_passed(), "domains_views");
}

/*
 * Open @path as uid and gid @uid (effective ids of a root process, as in a
 * setuid program), then read it as root again: 0 or the errno.
 */
static int read_opened_as(const char *path, uid_t uid)
{
	char buf[512];
	int status, fd;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (!pid) {
		if (setegid(uid) || seteuid(uid))
			_exit(100);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(101);
		if (seteuid(0))
			_exit(102);
		_exit(read(fd, buf, sizeof(buf)) < 0 ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* t with children a and b, the memory controller on in t. */
static bool nested_cgroups(void)
{
	return CHECK(memcg_create(CG_T) == 0, "mkdir " CG_T) &&
	       CHECK(write_file(CG_T "/cgroup.subtree_control", "+memory") == 0,
		     "memory controller in " CG_T) &&
	       CHECK(memcg_create(CG_TA) == 0 && memcg_create(CG_TB) == 0,
		     "mkdir " CG_TA " " CG_TB);
}

static void test_stat_access(void)
{
	struct kids k;
	int err;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write_str("merge_domain", "cgroup") == 0, "merge_domain");
	if (nested_cgroups() && clones_merge_as(&k, &nested, NPROC, 2 * NCONT)) {
		CHECK(kid_reads(&k, 0, CG_TA STAT) == 'o', "t/a reads t/a's");
		CHECK(kid_reads(&k, 0, CG_TB STAT) == 'a', "t/a reads t/b's");
		CHECK(kid_reads(&k, 0, CG_T STAT) == 'a',
		      "t/a reads t's, which has t/b's in it");
		err = read_opened_as(CG_T STAT, 1000);
		CHECK(err == EACCES, "t's opened as uid 1000, read as root: %d",
		      err);
		err = read_opened_as(CG_TA STAT, 1000);
		CHECK(err == 0, "t/a's opened as uid 1000, read as root: %d",
		      err);
		CHECK(key_value(CG_T STAT, "ksm_merging_pages") == NPROC * NPAGES,
		      "root reads t's: %ld",
		      key_value(CG_T STAT, "ksm_merging_pages"));
		CHECK(key_value(CG_TB STAT, "ksm_merging_pages") == 2 * NPAGES,
		      "root reads t/b's: %ld",
		      key_value(CG_TB STAT, "ksm_merging_pages"));
		CHECK(all_say(&k, NPROC, 'c', 'o'), "content");
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	CHECK(ksm_write("run", 2) == 0 &&
	      ksm_write_str("merge_domain", "system") == 0, "back to system");
	rmdir(CG_TA);
	rmdir(CG_TB);
	rmdir(CG_T);
	ktap_result(checks_passed(), "domains_stat_access");
}

/* The frames of every page of children 0 and 1, before merging. */
static unsigned long before[2][NPAGES];

static void test_fresh(void)
{
	struct counts_want want = { NCONT, 2 * NPAGES - NCONT };
	struct kids k;
	int reused = 0;
	char r[2];

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write("use_fresh_pages", 1) == 0, "use_fresh_pages=1");
	if (!CHECK(kids_start(&k, 2, clone_kid, NULL) == 0, "children") ||
	    !CHECK(kids_collect(&k, r), "children ready"))
		goto out;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < NPAGES; j++)
			before[i][j] = pid_pfn(k.pid[i],
					       bd->base[i] + j * page_size);
	CHECK(ksm_resume() == 0, "run=1");
	if (!CHECK(ksm_wait_until(counts_are, &want, SCANS), "merged"))
		goto quit;
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < NPAGES; j++) {
			unsigned long now = pid_pfn(k.pid[i],
						    bd->base[i] + j * page_size);

			/* Any page of this content was merged into it. */
			for (int x = 0; x < 2; x++)
				for (int y = j % NCONT; y < NPAGES; y += NCONT)
					reused += now == before[x][y];
		}
	}
	CHECK(!reused, "%d mappings on a frame of a page merged into it",
	      reused);
	CHECK(ksm_read("kernel_pages_allocated") == NCONT,
	      "kernel_pages_allocated %ld", ksm_read("kernel_pages_allocated"));
	CHECK(all_say(&k, 2, 'c', 'o'), "content merged");
	bd->write_page = 3;
	CHECK(all_say(&k, 1, 'w', 'o'), "copy on write");
	CHECK(all_say(&k, 2, 'c', 'o'), "content after the write");
	want.sharing--;
	CHECK(ksm_wait_until(counts_are, &want, SCANS), "written page left");
	{
		char u = 0;

		CHECK(kid_call(&k, 1, 'u', &u) && u == 'o', "unmergeable");
	}
	CHECK(all_say(&k, 2, 'c', 'o'), "content after MADV_UNMERGEABLE");
	CHECK(ksm_write("run", 2) == 0 && ksm_read("pages_shared") == 0,
	      "run=2");
	CHECK(all_say(&k, 2, 'c', 'o'), "content after run=2");
quit:
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
out:
	ksm_write("run", 2);
	ksm_write("use_fresh_pages", 0);
	ktap_result(checks_passed(), "fresh_pages");
}

struct cap_want {
	long cap, seen;
};

/* pages_shared at the cap, and it stayed there over the scans so far. */
static bool at_cap(void *arg)
{
	struct cap_want *w = arg;
	long shared = ksm_read("pages_shared");

	if (shared > w->cap)
		w->seen = shared;
	return shared == w->cap &&
	       ksm_read("kernel_pages_allocated") == w->cap;
}

static void test_fresh_cap(void)
{
	struct cap_want want = { 4, 0 };
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("use_fresh_pages", 1) == 0, "use_fresh_pages=1");
	CHECK(ksm_write("max_kernel_pages", 4) == 0, "max_kernel_pages=4");
	if (CHECK(kids_start(&k, 1, clone_kid, NULL) == 0, "children")) {
		char r;

		CHECK(kids_collect(&k, &r), "child ready");
		CHECK(ksm_wait_until(at_cap, &want, SCANS), "4 KSM pages");
		CHECK(ksm_wait_scans(2), "two more scans");
		at_cap(&want);
		CHECK(!want.seen && ksm_read("pages_shared") == 4,
		      "pages_shared %ld (at most %ld seen)",
		      ksm_read("pages_shared"), want.seen);
		CHECK(ksm_read("pages_sharing") == 4, "pages_sharing %ld",
		      ksm_read("pages_sharing"));
		CHECK(all_say(&k, 1, 'c', 'o'), "content");
	}
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ksm_write("run", 2);
	ksm_write("max_kernel_pages", 0);
	ksm_write("use_fresh_pages", 0);
	ktap_result(checks_passed(), "fresh_pages_cap");
}

/*
 * A child in CG_LIM: NPAIRS pairs of equal pages, mergeable; 'c' checks
 * them ('o'/'x'), 'q' quits.
 */
static int pairs_kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	char *p, cmd;

	if (write_file(CG_LIM "/cgroup.procs", "0"))
		return 1;
	p = map_pages(2 * NPAIRS);
	for (int j = 0; j < 2 * NPAIRS; j++)
		fill_pattern(p + j * page_size, SEED + 2, j / 2);
	if (merge_pages(p, 2 * NPAIRS))
		return 1;
	kid_reply(reply_fd, 'o');
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		bool ok = true;

		for (int j = 0; j < 2 * NPAIRS; j++)
			ok = ok && holds_pattern(p + j * page_size, SEED + 2,
						 j / 2);
		kid_reply(reply_fd, ok ? 'o' : 'x');
	}
	return 0;
}

/*
 * Charges are made in batches: what a cgroup charged ahead sits in each
 * CPU's stock, and a charge takes from it before the limit is looked at.
 * A process of another cgroup faulting a page on every CPU takes each
 * stock over, handing CG_LIM's back: memory.current is then what it uses.
 */
static bool drain_stocks(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (write_file(CG_DRAIN "/cgroup.procs", "0"))
			_exit(1);
		for (long c = 0; c < cpus; c++) {
			if (pin_to_cpu(0, c))
				_exit(2);
			*(volatile char *)map_pages(1) = 1;
		}
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * Limit CG_LIM to what it uses now, with no swap.  A kernel without swap
 * has no memory.swap.max and nothing to turn off.
 */
static bool limit_to_usage(void)
{
	char buf[32];
	long cur;

	if ((access(CG_LIM "/memory.swap.max", F_OK) == 0 &&
	     write_file(CG_LIM "/memory.swap.max", "0")) || !drain_stocks())
		return false;
	cur = read_long(CG_LIM "/memory.current");
	snprintf(buf, sizeof(buf), "%ld", cur);
	ktap_diag("cgroup limited to what it uses, %ld kB", cur >> 10);
	return cur > 0 && !write_file(CG_LIM "/memory.max", buf) &&
	       read_long(CG_LIM "/memory.current") <= cur;
}

static bool pairs_merged(void *arg)
{
	return ksm_read("pages_sharing") >= NPAIRS;
}

static void test_fresh_at_limit(void)
{
	struct kids k;
	char r = 0;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	if (!CHECK(memcg_create(CG_LIM) == 0 && memcg_create(CG_DRAIN) == 0,
		   "cgroups") ||
	    !CHECK(kids_start(&k, 1, pairs_kid, NULL) == 0, "child"))
		goto out;
	if (!CHECK(kids_collect(&k, &r) && r == 'o', "child ready") ||
	    !CHECK(limit_to_usage(), "memory.max"))
		goto quit;
	CHECK(ksm_write("use_fresh_pages", 1) == 0, "use_fresh_pages=1");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_until(pairs_merged, NULL, SCANS), "pairs merged: %ld",
	      ksm_read("pages_sharing"));
	CHECK(key_value(CG_LIM "/memory.events", "oom_kill") == 0,
	      "oom_kill %ld", key_value(CG_LIM "/memory.events", "oom_kill"));
	CHECK(kid_call(&k, 0, 'c', &r) && r == 'o', "child's content (%c)", r);
quit:
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child exits");
out:
	ksm_write("run", 2);
	ksm_write("use_fresh_pages", 0);
	cgroup_remove(CG_LIM);
	cgroup_remove(CG_DRAIN);
	ktap_result(checks_passed(), "fresh_pages_at_limit");
}

int main(void)
{
	static const char *const names[] = {
		"domains_system", "domains_process", "domains_cgroup",
		"domains_user", "domains_change", "domains_views",
		"domains_stat_access", "fresh_pages", "fresh_pages_cap",
		"fresh_pages_at_limit",
	};
	bool ours = ksm_read_str("merge_domain", (char[64]){ 0 }, 64) == 0;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	bd = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED || memcg_create(CG_A) || memcg_create(CG_B))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory cgroups");
	test_clones("system");
	if (ours) {
		test_clones("process");
		test_clones("cgroup");
		test_clones("user");
		test_change();
		test_views();
		test_stat_access();
		test_fresh();
		test_fresh_cap();
		test_fresh_at_limit();
	} else {
		for (size_t i = 1; i < ARRAY_SIZE(names); i++)
			ktap_skip_named(names[i], "no merge_domain (stock)");
	}
	rmdir(CG_A);
	rmdir(CG_B);
	return ktap_finish();
}
