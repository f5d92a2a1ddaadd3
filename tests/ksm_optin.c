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
 *   optin_move_leaderless: a process whose main thread exited (its group
 *     leader a zombie, which a move leaves behind) moves into A
 *     (memory.ksm 1) and comes to merge everything.
 *   optin_move_locked: moving a process into a cgroup must not wait for
 *     its mmap_lock with the cgroup locks held, which every fork and exit
 *     on the host needs too. Process H holds V's mmap_lock: it reads,
 *     through /proc/V/mem, a page of a file V maps from a FUSE server (in
 *     the test) that never answers the read. V is then moved from A
 *     (memory.ksm 0) into B (memory.ksm 1): the move returns, and a fork
 *     and an exit elsewhere complete, while the lock is held. W, which
 *     merges everything in B, its lock held the same way, moves into A
 *     and execs: the new program does not merge everything, though the
 *     change for W's old mm still waits for its lock. X, the same, moves
 *     into A and forks, which waits for the lock: X's child does not
 *     merge everything. Once the server drops the connection, H's read
 *     fails, and V comes to merge everything. It skips without /dev/fuse
 *     (CONFIG_FUSE_FS) or when the mount fails.
 *   optin_clone_into: a process in B (memory.ksm 1) starts a child in A
 *     (memory.ksm 0) with clone3(CLONE_INTO_CGROUP): the region the child
 *     maps is not mergeable, and PR_GET_MEMORY_MERGE says 0, at once. One
 *     in A starts a child in B: it merges everything, its pages merged
 *     and intact.
 *
 * A moved process's policy is applied by a work item, a little after the
 * move: checks that follow a move poll for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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
/* Bound of each wait of optin_move_locked, and of a policy after a move. */
#define WAIT_SECONDS	10
/* optin_move_locked's FUSE mount and its one file, of FUSE_PAGES pages. */
#define MNT		"/tmp/ksm_optin_fuse"
#define FUSE_FILE	"f"
#define FUSE_NODE	2
#define FUSE_PAGES	16
/* The FUSE server's read buffer: well above FUSE_MIN_READ_BUFFER. */
#define FUSE_BUF	(8 * FUSE_MIN_READ_BUFFER)

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
 * A child that clone3() started in another cgroup maps a region: does it
 * merge everything, or not, as @merges says that cgroup does? 0 if so.
 * Out of merging, the region is not made mergeable even before the move's
 * work item runs. Into merging, a region that the kernel joins to an area
 * next to it never reaches ksm_add_vma(): that one waits for the work
 * item, so it is polled for.
 */
static int cloned_child(bool merges)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	char *p = map_region();

	while (merges && prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) != 1 &&
	       monotonic_seconds() < deadline)
		usleep(10000);
	if (prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) != merges ||
	    mergeable_flag(p) != merges)
		return 1;
	if (merges && !ksm_wait_until(merged_self, NULL, SCANS))
		return 2;
	return region_ok(p) ? 0 : 3;
}

/*
 * clone3() a child into cgroup @cg (CLONE_INTO_CGROUP): its exit status
 * ('0' to '3', as cloned_child() returns), 'e' if there was none.
 */
static char clone_into(const char *cg, bool merges)
{
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
	};
	int fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC), status;
	pid_t pid;

	if (fd < 0)
		return 'e';
	args.cgroup = fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0)
		_exit(cloned_child(merges));
	close(fd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 'e';
	return '0' + WEXITSTATUS(status);
}

/* A child's PR_GET_MEMORY_MERGE ('0'/'1'; 'e' if the fork failed). */
static char fork_merges(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) == 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 'e';
	return '0' + WEXITSTATUS(status);
}

/*
 * A child's commands, on @region (one region mapped, room for REGIONS):
 * 'g' PR_GET_MEMORY_MERGE ('0'/'1'); 'v' is its newest region mergeable
 * ('y'/'n'); 'p' maps another region; 'm' are its pages merged ('y'/'n');
 * 'c' content ('k'/'x'); 'o' PR_SET_MEMORY_MERGE 0; 'f' fork a grandchild
 * that checks itself ('k', or why not); 'F' fork a child and say its
 * PR_GET_MEMORY_MERGE; 'A' or 'B' clone3() a child into cgroup A, where
 * nothing merges, or B, where all does, and say clone_into(); 'e' exec
 * this program to exit with the new PR_GET_MEMORY_MERGE ('x' if exec
 * failed); 'q' quit.
 */
static int kid_serve(char **region, int cmd, int reply)
{
	int n = 1;
	char c;

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
		case 'F':
			kid_reply(reply, fork_merges());
			break;
		case 'A':
			kid_reply(reply, clone_into(CG_A, false));
			break;
		case 'B':
			kid_reply(reply, clone_into(CG_B, true));
			break;
		case 'e':
			/* No reply: the new program's exit status says. */
			execl("/proc/self/exe", "ksm_optin", "--merge-any",
			      (char *)NULL);
			kid_reply(reply, 'x');
			break;
		}
	}
	return 0;
}

/* A child that maps a region, says 'r' and serves kid_serve()'s commands. */
static int kid_optin(void *arg, int i, int cmd, int reply)
{
	char *region[REGIONS] = { map_region() };

	kid_reply(reply, 'r');
	return kid_serve(region, cmd, reply);
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

/*
 * Is child @i in (@want 1) or out of (@want 0) merging everything? Its
 * answers to 'g' and 'v' in *@g and *@v.
 */
static bool policy_is(struct kids *k, int i, int want, char *g, char *v)
{
	*g = ask(k, i, 'g');
	*v = ask(k, i, 'v');
	return *g == '0' + want && *v == (want ? 'y' : 'n');
}

static void expect(struct kids *k, int i, int want, const char *what)
{
	char g, v;
	bool ok = policy_is(k, i, want, &g, &v);

	CHECK(ok, "%s: PR_GET_MEMORY_MERGE %c, mergeable %c, want %d", what,
	      g, v, want);
}

/*
 * expect() of a child just moved into another cgroup: the move applies
 * its policy from a work item, so it is polled for, WAIT_SECONDS at most.
 */
static void expect_soon(struct kids *k, int i, int want, const char *what)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	char g, v;
	bool ok;

	while (!(ok = policy_is(k, i, want, &g, &v)) &&
	       monotonic_seconds() < deadline)
		usleep(10000);
	CHECK(ok, "%s: PR_GET_MEMORY_MERGE %c, mergeable %c, want %d", what,
	      g, v, want);
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
	expect_soon(&k, 1, 1, "moved into A after");
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

/*
 * optin_move_locked. Children, each child 0 of a struct kids of its own:
 * the FUSE server, V (moved), H (holds V's mmap_lock), the mover (moves V
 * into B) and the checker (forks while the move goes on).
 */

/* One reply to the request @unique: a fuse_out_header and @size bytes. */
static void fuse_reply(int fd, uint64_t unique, int error, const void *arg,
		       size_t size)
{
	struct fuse_out_header h = {
		.len = sizeof(h) + size,
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)arg, .iov_len = size },
	};

	/* A reply the kernel refuses fails that request only: say so. */
	if (writev(fd, iov, size ? 2 : 1) != (ssize_t)h.len)
		ktap_diag("fuse: reply to request %llu: %s",
			  (unsigned long long)unique, strerror(errno));
}

/* Node @nodeid's attributes: the root directory, or the file; or none. */
static bool fuse_attr_of(uint64_t nodeid, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = nodeid;
	if (nodeid == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
		return true;
	}
	if (nodeid != FUSE_NODE)
		return false;
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->size = FUSE_PAGES * page_size;
	a->blocks = a->size / 512;
	return true;
}

/*
 * FUSE_INIT: the kernel's major version (7), the lower of both minors, no
 * readahead (a fault reads its one page only) and no optional feature.
 */
static void fuse_init(int fd, const struct fuse_in_header *in)
{
	const struct fuse_init_in *arg = (const void *)(in + 1);
	struct fuse_init_out out = {
		.major = FUSE_KERNEL_VERSION,
		.minor = arg->minor < FUSE_KERNEL_MINOR_VERSION ?
			 arg->minor : FUSE_KERNEL_MINOR_VERSION,
		.max_write = 4096,
	};

	fuse_reply(fd, in->unique, 0, &out, sizeof(out));
}

/* FUSE_LOOKUP: FUSE_FILE in the root is node FUSE_NODE; nothing else is. */
static void fuse_lookup(int fd, const struct fuse_in_header *in)
{
	const char *name = (const char *)(in + 1);
	size_t len = in->len - sizeof(*in);
	struct fuse_entry_out out = {
		.nodeid = FUSE_NODE,
		.entry_valid = WAIT_SECONDS,
		.attr_valid = WAIT_SECONDS,
	};

	if (in->nodeid != FUSE_ROOT_ID || len < sizeof(FUSE_FILE) ||
	    memcmp(name, FUSE_FILE, sizeof(FUSE_FILE))) {
		fuse_reply(fd, in->unique, -ENOENT, NULL, 0);
		return;
	}
	fuse_attr_of(FUSE_NODE, &out.attr);
	fuse_reply(fd, in->unique, 0, &out, sizeof(out));
}

static void fuse_getattr(int fd, const struct fuse_in_header *in)
{
	struct fuse_attr_out out = { .attr_valid = WAIT_SECONDS };

	if (fuse_attr_of(in->nodeid, &out.attr))
		fuse_reply(fd, in->unique, 0, &out, sizeof(out));
	else
		fuse_reply(fd, in->unique, -ENOENT, NULL, 0);
}

/* FUSE_OPEN: cached I/O (no FOPEN_DIRECT_IO), so mmap uses the page cache. */
static void fuse_open(int fd, const struct fuse_in_header *in)
{
	struct fuse_open_out out = { .fh = 1 };

	fuse_reply(fd, in->unique, 0, &out, sizeof(out));
}

/*
 * Answer request @in, except FUSE_READ: that one is never answered, so the
 * fault that sent it waits until the connection is aborted. Each is
 * reported to the parent with 'R' on @reply.
 */
static void fuse_answer(int fd, const struct fuse_in_header *in, int reply)
{
	switch (in->opcode) {
	case FUSE_INIT:
		fuse_init(fd, in);
		break;
	case FUSE_LOOKUP:
		fuse_lookup(fd, in);
		break;
	case FUSE_GETATTR:
		fuse_getattr(fd, in);
		break;
	case FUSE_OPEN:
		fuse_open(fd, in);
		break;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		fuse_reply(fd, in->unique, 0, NULL, 0);
		break;
	case FUSE_READ:
		kid_reply(reply, 'R');
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		/* No reply: none is expected, or the READ stays unanswered. */
		break;
	default:
		ktap_diag("fuse: opcode %u: ENOSYS", in->opcode);
		fuse_reply(fd, in->unique, -ENOSYS, NULL, 0);
	}
}

/* Read one request from /dev/fuse (non-blocking) and answer it. */
static void fuse_request(int fd, int reply)
{
	static uint64_t buf[FUSE_BUF / sizeof(uint64_t)];
	const struct fuse_in_header *in = (const void *)buf;
	ssize_t n = read(fd, buf, sizeof(buf));

	/* EAGAIN: taken back before it was read; ENODEV: aborted. */
	if (n >= (ssize_t)sizeof(*in) && in->len >= sizeof(*in) &&
	    in->len <= (size_t)n)
		fuse_answer(fd, in, reply);
}

/*
 * Serve /dev/fuse @fd and the parent's commands on @cmd: 'x' closes @fd,
 * which aborts the connection (the last /dev/fuse file of it), and answers
 * 'k'; 'q' or EOF quits. Closing is how the test releases V's mmap_lock:
 * it takes no lock that fork or exit need. Killing the server would not
 * do: its exit, before it closes its files, may wait for the same
 * cgroup_threadgroup_rwsem as a stuck move.
 */
static int fuse_serve(int fd, int cmd, int reply)
{
	struct pollfd p[2] = {
		{ .fd = cmd, .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	char c;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents) {
			if (read(cmd, &c, 1) != 1 || c == 'q')
				return 0;
			if (c == 'x' && fd >= 0) {
				close(fd);
				fd = p[1].fd = -1;
			}
			kid_reply(reply, 'k');
			continue;
		}
		/* Unmounted or aborted: nothing more will come. */
		if (p[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			p[1].fd = -1;
		else if (p[1].revents & POLLIN)
			fuse_request(fd, reply);
	}
}

/*
 * The FUSE server: opens /dev/fuse, mounts it at MNT, says 'm' and serves.
 * On failure it says 'd' (no /dev/fuse) or 'e' (mount), then the errno.
 */
static int kid_fuse(void *arg, int i, int cmd, int reply)
{
	char data[128], why;
	int fd, err;

	fd = open("/dev/fuse", O_RDWR | O_NONBLOCK);
	if (fd >= 0) {
		snprintf(data, sizeof(data),
			 "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
		if (!mount("ksm_optin", MNT, "fuse", MS_NOSUID | MS_NODEV,
			   data)) {
			kid_reply(reply, 'm');
			return fuse_serve(fd, cmd, reply);
		}
	}
	err = errno;
	why = fd < 0 ? 'd' : 'e';
	kid_reply(reply, why);
	return write(reply, &err, sizeof(err)) == sizeof(err) ? 0 : 1;
}

/*
 * V: a region as kid_optin()'s, and file @arg mapped, never touched. It
 * says 'r' and the mapping's address, or 'e' and the errno, then serves
 * kid_serve()'s commands.
 */
static int kid_fuse_mapper(void *arg, int i, int cmd, int reply)
{
	char *region[REGIONS] = { map_region() };
	void *p = MAP_FAILED;
	uintptr_t addr;
	int fd, err;

	fd = open(arg, O_RDONLY);
	if (fd >= 0) {
		p = mmap(NULL, FUSE_PAGES * page_size, PROT_READ, MAP_PRIVATE,
			 fd, 0);
		close(fd);
	}
	if (p == MAP_FAILED) {
		err = errno;
		kid_reply(reply, 'e');
		return write(reply, &err, sizeof(err)) == sizeof(err) ? 0 : 1;
	}
	addr = (uintptr_t)p;
	kid_reply(reply, 'r');
	if (write(reply, &addr, sizeof(addr)) != sizeof(addr))
		return 1;
	return kid_serve(region, cmd, reply);
}

struct hold {
	pid_t pid;
	uintptr_t addr;
};

/*
 * H: read a byte at @arg's address of its process, through /proc/PID/mem.
 * That remote GUP may not drop the mmap_lock in a fault: while the FUSE
 * read waits, H holds V's mmap_lock for reading. Says 'k' if the read
 * returned the byte, 'e' if it failed (as it does once aborted).
 */
static int kid_holder(void *arg, int i, int cmd, int reply)
{
	const struct hold *h = arg;
	char path[64], c;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", h->pid);
	fd = open(path, O_RDONLY);
	/* 64-bit offsets: on i386 addresses pass 2 GiB. */
	if (fd >= 0)
		n = pread64(fd, &c, 1, (off64_t)h->addr);
	kid_reply(reply, n == 1 ? 'k' : 'e');
	return 0;
}

/* A move to make: process @pid into cgroup @cg. */
struct move_to {
	pid_t pid;
	const char *cg;
};

/* The mover: the move @arg says; says what move_to() returned. */
static int kid_mover(void *arg, int i, int cmd, int reply)
{
	const struct move_to *to = arg;
	int err = move_to(to->cg, to->pid);

	return write(reply, &err, sizeof(err)) == sizeof(err) ? 0 : 1;
}

/* The checker: on 'f', fork a child that exits at once, reap it, say 'k'. */
static int kid_forker(void *arg, int i, int cmd, int reply)
{
	while (kid_wait_cmd(cmd) == 'f') {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		kid_reply(reply, pid > 0 && waitpid(pid, NULL, 0) == pid ?
			  'k' : 'e');
	}
	return 0;
}

/* Read @size bytes from @fd within @seconds; false on timeout or EOF. */
static bool read_within(int fd, void *buf, size_t size, double seconds)
{
	double deadline = monotonic_seconds() + seconds;
	size_t got = 0;

	while (got < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ms = (deadline - monotonic_seconds()) * 1000;
		ssize_t n;

		if (ms < 0 || poll(&p, 1, ms) <= 0)
			return false;
		n = read(fd, (char *)buf + got, size - got);
		if (n <= 0)
			return false;
		got += n;
	}
	return true;
}

/* ask() of child 0 of @k, bounded: '-' if no answer in WAIT_SECONDS. */
static char ask_within(struct kids *k, char cmd)
{
	char c = '-';

	if (!kid_send(k, 0, cmd) ||
	    !read_within(k->from_kid[0], &c, 1, WAIT_SECONDS))
		return '-';
	return c;
}

/* Field 3 of /proc/@pid/stat, the task's state: 'R', 'S', 'D'...; or '?'. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)))
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* waitpid() of @pid within @seconds; false if it has not exited by then. */
static bool wait_exit(pid_t pid, int *status, double seconds)
{
	double deadline = monotonic_seconds() + seconds;

	while (waitpid(pid, status, WNOHANG) != pid) {
		if (monotonic_seconds() > deadline)
			return false;
		usleep(10000);
	}
	return true;
}

/*
 * Reap child 0 of @k (if started): 'q', then SIGKILL if it has not exited
 * within WAIT_SECONDS. True if it exited 0. One stuck even then (in D) is
 * left, with a diagnostic.
 */
static bool kid_end(struct kids *k)
{
	pid_t pid = k->n ? k->pid[0] : 0;
	int status = -1;

	if (!pid)
		return true;
	kid_send(k, 0, 'q');
	close(k->to_kid[0]);
	close(k->from_kid[0]);
	k->pid[0] = 0;
	if (!wait_exit(pid, &status, WAIT_SECONDS)) {
		kill(pid, SIGKILL);
		if (!wait_exit(pid, &status, WAIT_SECONDS)) {
			ktap_diag("child %d stuck in state %c", pid,
				  proc_state(pid));
			return false;
		}
	}
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * Start the FUSE server as child 0 of @srv, mounted at MNT: NULL if it
 * runs, else why not, to skip with.
 */
static const char *fuse_start(struct kids *srv)
{
	static char why[128];
	char c = '-';
	int err = 0;

	if (mkdir(MNT, 0755) && errno != EEXIST) {
		snprintf(why, sizeof(why), "mkdir %s: %s", MNT,
			 strerror(errno));
		return why;
	}
	if (kids_start(srv, 1, kid_fuse, NULL) ||
	    !read_within(srv->from_kid[0], &c, 1, WAIT_SECONDS)) {
		snprintf(why, sizeof(why), "the FUSE server did not start");
		return why;
	}
	if (c == 'm')
		return NULL;
	read_within(srv->from_kid[0], &err, sizeof(err), WAIT_SECONDS);
	snprintf(why, sizeof(why), c == 'd' ?
		 "cannot open /dev/fuse (CONFIG_FUSE_FS): %s" :
		 "cannot mount fuse: %s", strerror(err));
	return why;
}

/* Stop the server, unmount, remove the mount point. */
static void fuse_stop(struct kids *srv)
{
	CHECK(kid_end(srv), "FUSE server");
	if (umount2(MNT, MNT_DETACH) && errno != EINVAL)
		ktap_diag("umount %s: %s", MNT, strerror(errno));
	rmdir(MNT);
}

/*
 * Start V as child 0 of @v, in @cg, where PR_GET_MEMORY_MERGE comes to say
 * @merges; its FUSE mapping's address in *@addr.
 */
static bool victim_start(struct kids *v, uintptr_t *addr, const char *cg,
			 char merges)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	char c = '-';
	int err = 0;

	if (!CHECK(kids_start(v, 1, kid_fuse_mapper, MNT "/" FUSE_FILE) == 0,
		   "fork V"))
		return false;
	if (!read_within(v->from_kid[0], &c, 1, WAIT_SECONDS) || c != 'r') {
		if (c == 'e')
			read_within(v->from_kid[0], &err, sizeof(err),
				    WAIT_SECONDS);
		CHECK(false, "V: open and mmap %s: %s", MNT "/" FUSE_FILE,
		      c == 'e' ? strerror(err) : "no answer");
		return false;
	}
	if (!CHECK(read_within(v->from_kid[0], addr, sizeof(*addr),
			       WAIT_SECONDS), "V: address") ||
	    !CHECK(move_to(cg, v->pid[0]) == 0, "V into %s", cg))
		return false;
	while ((c = ask_within(v, 'g')) != merges &&
	       monotonic_seconds() < deadline)
		usleep(10000);
	return CHECK(c == merges, "V in %s: PR_GET_MEMORY_MERGE %c", cg, c);
}

/*
 * Start H as child 0 of @h on V's FUSE page, and wait until it holds V's
 * mmap_lock: the server got a FUSE_READ (only H's fault sends one) and H
 * sleeps in it, in state S (the request's wait is interruptible) or D.
 */
static bool hold_start(struct kids *h, struct kids *srv, struct hold *arg)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	char c = '-', st = '?';

	if (!CHECK(kids_start(h, 1, kid_holder, arg) == 0, "fork H"))
		return false;
	if (!read_within(srv->from_kid[0], &c, 1, WAIT_SECONDS) || c != 'R') {
		char r = '-';

		read_within(h->from_kid[0], &r, 1, 0);
		CHECK(false, "no FUSE_READ from H: server %c, H %c", c, r);
		return false;
	}
	while ((st = proc_state(h->pid[0])) != 'S' && st != 'D' &&
	       monotonic_seconds() < deadline)
		usleep(10000);
	return CHECK(st == 'S' || st == 'D', "H in state %c, not asleep", st);
}

struct move {
	struct kids mov, chk;
	double start;
	bool moved;	/* the mover's write to cgroup.procs returned */
	int err;	/* and what move_to() said */
	bool asked;	/* the checker was told to fork */
	char forked;	/* its answer, '-' until it came */
};

/* Has the mover returned, waiting until @start + @seconds at most? */
static bool moved_by(struct move *m, double seconds)
{
	double left = m->start + seconds - monotonic_seconds();

	if (!m->moved && m->mov.n)
		m->moved = read_within(m->mov.from_kid[0], &m->err,
				       sizeof(m->err), left > 0 ? left : 0);
	return m->moved;
}

/*
 * With V's mmap_lock held: move V into B, and once the mover had 200 ms to
 * get into the move, have the checker fork and reap a child. Both must
 * return: the move's policy change is to wait for the lock elsewhere.
 */
static void move_held(struct move *m, pid_t vpid)
{
	struct move_to to = { vpid, CG_B };

	m->start = monotonic_seconds();
	if (!CHECK(kids_start(&m->mov, 1, kid_mover, &to) == 0,
		   "fork the mover"))
		return;
	moved_by(m, 0.2);
	m->asked = kid_send(&m->chk, 0, 'f');
	if (m->asked)
		read_within(m->chk.from_kid[0], &m->forked, 1, WAIT_SECONDS);
	CHECK(m->forked == 'k',
	      "a fork waited for V's mmap_lock: checker %c, mover %s",
	      m->forked, m->moved ? "returned" : "stuck");
	CHECK(moved_by(m, WAIT_SECONDS) && m->err == 0,
	      "the move into B returned while V's mmap_lock was held: %s",
	      m->moved ? strerror(-m->err) : "stuck");
}

/* With @w's mmap_lock held: move @w into A; did it return? */
static bool move_out(struct kids *w, const char *who)
{
	struct move_to to = { w->pid[0], CG_A };
	struct move m2 = { .forked = '-' };
	bool moved;

	m2.start = monotonic_seconds();
	if (!CHECK(kids_start(&m2.mov, 1, kid_mover, &to) == 0,
		   "fork the mover of %s", who))
		return false;
	moved = CHECK(moved_by(&m2, WAIT_SECONDS) && m2.err == 0,
		      "%s's move into A: %s", who,
		      m2.moved ? strerror(-m2.err) : "stuck");
	CHECK(kid_end(&m2.mov), "mover of %s", who);
	return moved;
}

/*
 * With W's mmap_lock held too: W, which merges everything in B, moves into
 * A (memory.ksm 0), and execs. The work item for its old mm cannot have
 * run, but the new program must not merge everything: its exit status is
 * its PR_GET_MEMORY_MERGE (main()).
 */
static void exec_after_move(struct kids *w)
{
	int status = -1;

	if (move_out(w, "W") && CHECK(kid_send(w, 0, 'e'), "W: exec") &&
	    CHECK(wait_exit(w->pid[0], &status, WAIT_SECONDS),
		  "W's new program did not end")) {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "W's new program: PR_GET_MEMORY_MERGE %d, want 0",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		close(w->to_kid[0]);
		close(w->from_kid[0]);
		w->pid[0] = 0;
	}
}

/*
 * With X's mmap_lock held too: X, which merges everything in B, moves into
 * A and forks; the fork waits for X's mmap_lock. Is X's child, once the
 * lock is free, out of merging, whatever became of X's work item?
 */
static bool fork_after_move(struct kids *x)
{
	return move_out(x, "X") && CHECK(kid_send(x, 0, 'F'), "X: fork");
}

/*
 * Release V's mmap_lock: have the server close /dev/fuse (fuse_serve()),
 * skipping a late 'R' before its 'k'. Did it?
 */
static bool fuse_abort(struct kids *srv)
{
	char c = '-';

	if (!kid_send(srv, 0, 'x'))
		return false;
	while (read_within(srv->from_kid[0], &c, 1, WAIT_SECONDS) && c != 'k')
		;
	return c == 'k';
}

/* After the release: let the checker and the mover finish, bounded. */
static void move_finish(struct move *m)
{
	if (m->asked && m->forked == '-')
		read_within(m->chk.from_kid[0], &m->forked, 1, WAIT_SECONDS);
	if (m->mov.n && !moved_by(m, 3 * WAIT_SECONDS))
		ktap_diag("the move into B never returned");
	CHECK(kid_end(&m->mov), "mover");
	CHECK(kid_end(&m->chk), "checker");
}

static bool v_merged(void *arg)
{
	return ask_within(arg, 'm') == 'y';
}

/* V, moved into B, merges everything: applied once the lock was free. */
static void expect_v_merges(struct kids *v)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	char g;

	while ((g = ask_within(v, 'g')) == '0' &&
	       monotonic_seconds() < deadline)
		usleep(10000);
	CHECK(g == '1' && ask_within(v, 'v') == 'y',
	      "V in B: PR_GET_MEMORY_MERGE %c", g);
	CHECK(ksm_wait_until(v_merged, v, SCANS), "V's pages merged");
	CHECK(ask_within(v, 'c') == 'k', "V's content");
}

/* H's answer once the read it holds a lock with has failed; then reap. */
static void holder_end(struct kids *h)
{
	char r = '-';

	/* Its reply first: kid_end() closes the pipe it writes to. */
	if (h->n)
		CHECK(read_within(h->from_kid[0], &r, 1, WAIT_SECONDS) &&
		      r == 'e', "H's read after the release: %c", r);
	CHECK(kid_end(h), "H");
}

static void test_move_locked(void)
{
	struct kids srv = { 0 }, v = { 0 }, h = { 0 }, w = { 0 }, hw = { 0 };
	struct kids x = { 0 }, hx = { 0 };
	struct move m = { .forked = '-' };
	struct hold arg = { 0 }, argw = { 0 }, argx = { 0 };
	const char *why = fuse_start(&srv);
	bool forked = false;
	char xr = '-';

	if (why) {
		kid_end(&srv);
		rmdir(MNT);
		ktap_skip_named("optin_move_locked", why);
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	CHECK(memcg_ksm_write(CG_A, "0") == 0 &&
	      memcg_ksm_write(CG_B, "1") == 0, "A: memory.ksm=0, B: 1");
	/* Forked before the hold: a fork may wait for a stuck move. */
	CHECK(kids_start(&m.chk, 1, kid_forker, NULL) == 0,
	      "fork the checker");
	if (victim_start(&v, &arg.addr, CG_A, '0') &&
	    victim_start(&w, &argw.addr, CG_B, '1') &&
	    victim_start(&x, &argx.addr, CG_B, '1')) {
		arg.pid = v.pid[0];
		argw.pid = w.pid[0];
		argx.pid = x.pid[0];
		/* Other pages: one whose read is in flight has no new READ. */
		argw.addr += page_size;
		argx.addr += 2 * page_size;
		if (hold_start(&h, &srv, &arg) &&
		    hold_start(&hw, &srv, &argw) &&
		    hold_start(&hx, &srv, &argx)) {
			move_held(&m, arg.pid);
			exec_after_move(&w);
			forked = fork_after_move(&x);
		}
	}
	CHECK(fuse_abort(&srv), "release: close /dev/fuse");
	holder_end(&h);
	holder_end(&hw);
	holder_end(&hx);
	if (forked)
		CHECK(read_within(x.from_kid[0], &xr, 1, WAIT_SECONDS) &&
		      xr == '0', "X's child: PR_GET_MEMORY_MERGE %c, want 0",
		      xr);
	move_finish(&m);
	if (m.moved && !m.err)
		expect_v_merges(&v);
	CHECK(kid_end(&v), "V");
	CHECK(kid_end(&w), "W");
	CHECK(kid_end(&x), "X");
	fuse_stop(&srv);
	CHECK(memcg_ksm_write(CG_A, "default") == 0 &&
	      memcg_ksm_write(CG_B, "default") == 0, "A and B: default");
	ktap_result(checks_passed(), "optin_move_locked");
}

/* What the thread that outlives its process's main thread serves. */
struct serve {
	char **region;
	int cmd, reply;
};

static void *serve_thread(void *arg)
{
	struct serve *s = arg;

	exit(kid_serve(s->region, s->cmd, s->reply));
}

/*
 * A child whose main thread exits once another thread serves
 * kid_serve()'s commands: its thread group leader is a zombie, which a
 * cgroup move leaves behind while it moves the live thread.
 */
static int kid_leaderless(void *arg, int i, int cmd, int reply)
{
	static char *region[REGIONS];
	static struct serve s;
	pthread_t th;

	region[0] = map_region();
	s = (struct serve){ region, cmd, reply };
	if (pthread_create(&th, NULL, serve_thread, &s))
		return 1;
	kid_reply(reply, 'r');
	pthread_exit(NULL);
}

/*
 * optin_move_leaderless: a process whose main thread has exited moves
 * into A (memory.ksm 1): its live thread moves, and the process comes to
 * merge everything.
 */
static void test_move_leaderless(void)
{
	double deadline = monotonic_seconds() + WAIT_SECONDS;
	struct kids k;
	char r = '-';

	CHECK(ksm_reset() == 0, "reset");
	CHECK(memcg_ksm_write(CG_A, "1") == 0, "A: memory.ksm=1");
	if (!CHECK(kids_start(&k, 1, kid_leaderless, NULL) == 0, "fork"))
		goto out;
	CHECK(kids_collect(&k, &r) && r == 'r', "ready");
	while (proc_state(k.pid[0]) != 'Z' && monotonic_seconds() < deadline)
		usleep(10000);
	CHECK(proc_state(k.pid[0]) == 'Z', "leader state %c",
	      proc_state(k.pid[0]));
	expect(&k, 0, 0, "not in A yet");
	CHECK(move_to(CG_A, k.pid[0]) == 0, "into A");
	expect_soon(&k, 0, 1, "moved into A without its leader");
	CHECK(wait_merged(&k, 0), "merged");
	CHECK(ask(&k, 0, 'c') == 'k', "content");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child");
out:
	CHECK(memcg_ksm_write(CG_A, "default") == 0, "A: default");
	ktap_result(checks_passed(), "optin_move_leaderless");
}

/*
 * optin_clone_into: clone3() with CLONE_INTO_CGROUP starts a child in
 * another cgroup than its parent's, with its parent's flags: it follows
 * its own cgroup, as a process moved there does.
 */
static void test_clone_into(void)
{
	struct kids k;
	char r[2];

	CHECK(ksm_reset() == 0, "reset");
	CHECK(memcg_ksm_write(CG_A, "0") == 0 &&
	      memcg_ksm_write(CG_B, "1") == 0, "A: memory.ksm=0, B: 1");
	if (!CHECK(kids_start(&k, 2, kid_optin, NULL) == 0, "fork"))
		goto out;
	CHECK(kids_collect(&k, r), "ready");
	CHECK(move_to(CG_B, k.pid[0]) == 0 && move_to(CG_A, k.pid[1]) == 0,
	      "into B and A");
	expect_soon(&k, 0, 1, "moved into B");
	expect_soon(&k, 1, 0, "moved into A");
	r[0] = ask(&k, 0, 'A');
	CHECK(r[0] == '0', "cloned from B into A: %c", r[0]);
	r[1] = ask(&k, 1, 'B');
	CHECK(r[1] == '0', "cloned from A into B: %c", r[1]);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
out:
	CHECK(memcg_ksm_write(CG_A, "default") == 0 &&
	      memcg_ksm_write(CG_B, "default") == 0, "A and B: default");
	ktap_result(checks_passed(), "optin_clone_into");
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
		"optin_cgroup", "optin_host", "optin_move_leaderless",
		"optin_move_locked", "optin_clone_into",
	};
	bool cg, memcg_ksm;

	/* kid_serve()'s 'e': does the new program merge everything? */
	if (argc == 2 && !strcmp(argv[1], "--merge-any"))
		return prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) == 1;
	cg = memcg_create(CG_A) == 0 && memcg_create(CG_B) == 0;
	memcg_ksm = cg && memcg_ksm_is(CG_A, "default");

	ksm_save_settings();
	if (ksm_read("merge_all") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no merge_all (not samepage)");
	ktap_plan(ARRAY_SIZE(names));
	if (memcg_ksm)
		test_cgroup();
	else
		ktap_skip_named("optin_cgroup", "no memory controller");
	if (cg)
		test_host();
	else
		ktap_skip_named("optin_host", "no memory controller");
	if (memcg_ksm) {
		test_move_leaderless();
		test_move_locked();
		test_clone_into();
	} else {
		ktap_skip_named("optin_move_leaderless", cg ?
				"no memory.ksm" : "no memory controller");
		ktap_skip_named("optin_move_locked", cg ?
				"no memory.ksm" : "no memory controller");
		ktap_skip_named("optin_clone_into", cg ?
				"no memory.ksm" : "no memory controller");
	}
	ksm_write("merge_all", 0);
	rmdir(CG_A);
	rmdir(CG_B);
	return ktap_finish();
}
