// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_delegate.c - opt-in without privilege (samepage's): the owner of a
 * delegated cgroup subtree writes memory.ksm of the cgroups it created.
 *
 * Root makes ksm_dlg, the delegation root, with the memory controller for
 * its children, and delegates it to uid 1000 as cgroup v2 says: the
 * directory, cgroup.procs, cgroup.threads and cgroup.subtree_control
 * become the delegatee's; the other files stay root's. The owner's
 * process starts in ksm_dlg/init, as a delegated user session's does, and
 * moves itself (as uid 1000) into a cgroup it creates, ksm_dlg/c.
 *
 *   delegate_opt_in: the owner writes 1 to c's memory.ksm; its process,
 *     which never asked, then merges all its memory: a new mapping is
 *     mergeable (smaps "mg"), pairs of equal pages merge (ksm_stat), and
 *     every page keeps its content, through a write to one of each pair.
 *   delegate_bounds: the owner may not write memory.ksm of the delegation
 *     root, nor of a sibling cgroup (EACCES), and both still say
 *     "default"; a bad value is EINVAL, and c still says 1.
 *   delegate_own_only: the owner's 1 covers only its own programs: a
 *     process of uid 1001 that root put in c does not merge all, nor does
 *     a set-user-ID root program the owner starts there, while the same
 *     program without the set-user-ID bit does.
 *   delegate_veto: root's 0 on the delegation root overrides the owner's
 *     1 below it: the owner's new mappings are no longer mergeable, and
 *     are again once root writes "default". Root's own 1 on c covers
 *     uid 1001's process too, as before delegation existed.
 *
 * memory.ksm is samepage's: every test skips on stock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define CG_D		CGROUP_ROOT "/ksm_dlg"
#define CG_C		CG_D "/c"
#define CG_I		CG_D "/init"	/* where the delegatee starts */
#define CG_O		CGROUP_ROOT "/ksm_dlg_other"
#define OWNER		1000
#define OTHER		1001
#define PAIRS		32
#define SEED		0xde1e
#define SUID_PROG	"/tmp/ksm_dlg_suid"
#define PLAIN_PROG	"/tmp/ksm_dlg_plain"
#define PROBE_ARG	"--probe"
/* Exit status of a probe: base + whether its new mapping is mergeable. */
#define PROBE_BASE	40

static const char *const names[] = {
	"delegate_opt_in", "delegate_bounds", "delegate_own_only",
	"delegate_veto",
};

/* A new mapping's "mg" flag: 1, 0, or -1. */
static int new_mapping_mergeable(void)
{
	char *p = map_pages(1);
	int mg = mergeable_flag(p);

	munmap(p, page_size);
	return mg;
}

/* Run @prog as a probe in a child: its new mapping's flag, or -1. */
static int probe(const char *prog)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execl(prog, prog, PROBE_ARG, (char *)NULL);
		_exit(1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	status = WEXITSTATUS(status) - PROBE_BASE;
	return status == 0 || status == 1 ? status : -1;
}

static int write_ksm(const char *cg, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.ksm", cg);
	return write_file_trunc(path, value);
}

static bool ksm_says(const char *cg, const char *value)
{
	char path[256], buf[32] = "";

	snprintf(path, sizeof(path), "%s/memory.ksm", cg);
	return read_file(path, buf, sizeof(buf)) == 0 && !strcmp(buf, value);
}

/* The writes of memory.ksm the owner tries, by command. */
static const struct {
	char cmd;
	const char *cg, *value;
} tries[] = {
	{ 'w', CG_C, "1" },	/* its own cgroup */
	{ 'b', CG_D, "1" },	/* the delegation root */
	{ 's', CG_O, "1" },	/* a sibling */
	{ 'x', CG_C, "2" },	/* a bad value */
};

static int try_write(char cmd)
{
	for (size_t i = 0; i < ARRAY_SIZE(tries); i++)
		if (tries[i].cmd == cmd)
			return write_ksm(tries[i].cg, tries[i].value);
	return -EINVAL;
}

/*
 * Kid 0, the owner: into the delegation root as root, then uid 1000, then
 * into c, which it creates. Kid 1, uid 1001, is put in c by root.
 * Commands: 'm' replies whether a new mapping is mergeable ('1', '0');
 * 'p' and 'u' (plain, set-user-ID) start a probe and reply its flag;
 * 'w', 'b', 's', 'x' try a write of tries[], replying 'o', 'A' (EACCES),
 * 'I' (EINVAL) or 'E'; 'l' loads pairs of
 * equal pages, 'c' checks they merged and hold their content; 'e' exits.
 */
static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	char *pairs = NULL, cmd;

	if (i == 0) {
		if (write_file(CG_I "/cgroup.procs", "0") ||
		    setgid(OWNER) || setuid(OWNER) ||
		    prctl(PR_SET_DUMPABLE, 1) ||
		    (mkdir(CG_C, 0755) && errno != EEXIST) ||
		    write_file(CG_C "/cgroup.procs", "0"))
			return 1;
	} else if (setgid(OTHER) || setuid(OTHER) ||
		   prctl(PR_SET_DUMPABLE, 1)) {
		return 1;
	}
	kid_reply(reply_fd, 'r');
	for (;;) {
		int r = 'o', e = 0;

		cmd = kid_wait_cmd(cmd_fd);
		switch (cmd) {
		case 'm':
			r = '0' + new_mapping_mergeable();
			break;
		case 'p':
			r = '0' + probe(PLAIN_PROG);
			break;
		case 'u':
			r = '0' + probe(SUID_PROG);
			break;
		case 'w':
		case 'b':
		case 's':
		case 'x':
			e = try_write(cmd);
			break;
		case 'l':
			pairs = map_pages(2 * PAIRS);
			for (int j = 0; j < 2 * PAIRS; j++)
				fill_pattern(pairs + j * page_size, SEED, j / 2);
			break;
		case 'c':
			if (ksm_stat(0, "ksm_merging_pages") < PAIRS)
				r = 'n';
			pairs[0] ^= 1;
			for (int j = 1; j < 2 * PAIRS; j++)
				if (!holds_pattern(pairs + j * page_size, SEED,
						   j / 2))
					r = 'd';
			pairs[0] ^= 1;
			if (!holds_pattern(pairs, SEED, 0))
				r = 'd';
			break;
		case 'e':
			return 0;
		}
		if (e)
			r = e == -EACCES ? 'A' : e == -EINVAL ? 'I' : 'E';
		kid_reply(reply_fd, r);
	}
}

static char ask(struct kids *k, int i, char cmd)
{
	char r = 0;

	if (!kid_call(k, i, cmd, &r))
		return 0;
	return r;
}

static void test_opt_in(struct kids *k)
{
	char r;

	CHECK(ask(k, 0, 'm') == '0', "not merging before");
	CHECK(ask(k, 0, 'w') == 'o', "the owner writes 1 to its cgroup");
	CHECK(ksm_says(CG_C, "1"), "c says 1");
	CHECK(ask(k, 0, 'm') == '1', "a new mapping is mergeable");
	CHECK(ask(k, 0, 'l') == 'o', "pairs loaded");
	CHECK(ksm_wait_scans(6), "scans");
	r = ask(k, 0, 'c');
	CHECK(r == 'o', "pairs merged (%c), content held", r);
	ktap_result(checks_passed(), "%s", names[0]);
}

static void test_bounds(struct kids *k)
{
	CHECK(ask(k, 0, 'b') == 'A' && ksm_says(CG_D, "default"),
	      "the delegation root's memory.ksm is its delegator's");
	CHECK(ask(k, 0, 's') == 'A' && ksm_says(CG_O, "default"),
	      "a sibling's memory.ksm is not the owner's");
	CHECK(ask(k, 0, 'x') == 'I' && ksm_says(CG_C, "1"),
	      "bad value: EINVAL, unchanged");
	ktap_result(checks_passed(), "%s", names[1]);
}

static void test_own_only(struct kids *k)
{
	CHECK(ask(k, 1, 'm') == '0', "uid %d's process in c does not merge",
	      OTHER);
	CHECK(ask(k, 0, 'u') == '0',
	      "a set-user-ID program the owner starts does not");
	CHECK(ask(k, 0, 'p') == '1', "the same program, plain, does");
	ktap_result(checks_passed(), "%s", names[2]);
}

static void test_veto(struct kids *k)
{
	CHECK(write_ksm(CG_D, "0") == 0, "root writes 0 above");
	CHECK(ask(k, 0, 'm') == '0', "the owner's 1 is overridden");
	CHECK(ask(k, 0, 'p') == '0', "and so for its programs");
	CHECK(write_ksm(CG_D, "default") == 0, "root writes default");
	CHECK(ask(k, 0, 'm') == '1', "the owner's 1 counts again");
	CHECK(write_ksm(CG_C, "1") == 0 && ask(k, 1, 'm') == '1',
	      "root's own 1 on c covers uid %d too", OTHER);
	CHECK(write_ksm(CG_C, "default") == 0, "c back to default");
	ktap_result(checks_passed(), "%s", names[3]);
}

/* Delegate CG_D to OWNER: 0 or -1. */
static int delegate(void)
{
	static const char *const files[] = {
		"", "/cgroup.procs", "/cgroup.threads",
		"/cgroup.subtree_control", "/init/cgroup.procs",
	};
	char path[256];

	if (memcg_create(CG_D) || memcg_create(CG_O) ||
	    write_file(CG_D "/cgroup.subtree_control", "+memory") ||
	    (mkdir(CG_I, 0755) && errno != EEXIST) ||
	    chown(CG_I, OWNER, OWNER))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s%s", CG_D, files[i]);
		if (chown(path, OWNER, OWNER))
			return -1;
	}
	return 0;
}

/* The probes: this program, once set-user-ID root and once not. */
static int install_probes(void)
{
	char buf[1 << 16];
	ssize_t n;
	int in = open("/proc/self/exe", O_RDONLY);
	int s = open(SUID_PROG, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	int p = open(PLAIN_PROG, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	int err = in < 0 || s < 0 || p < 0;

	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		err = write(s, buf, n) != n || write(p, buf, n) != n;
	if (in >= 0)
		close(in);
	if (s >= 0)
		close(s);
	if (p >= 0)
		close(p);
	if (!err)
		err = chmod(SUID_PROG, 04755) || chmod(PLAIN_PROG, 0755);
	return err ? -1 : 0;
}

static void cleanup(void)
{
	cgroup_remove(CG_C);
	cgroup_remove(CG_I);
	cgroup_remove(CG_D);
	cgroup_remove(CG_O);
	unlink(SUID_PROG);
	unlink(PLAIN_PROG);
}

/* The two children up, the owner in c and uid 1001 put there: 0 or -1. */
static int start(struct kids *k)
{
	char replies[2], pid[16];

	if (install_probes() || ksm_reset() || kids_start(k, 2, kid, NULL))
		return -1;
	if (!kids_collect(k, replies) || replies[0] != 'r' ||
	    replies[1] != 'r')
		return -1;
	snprintf(pid, sizeof(pid), "%d", (int)k->pid[1]);
	return write_file(CG_C "/cgroup.procs", pid) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct kids k;

	if (argc > 1 && !strcmp(argv[1], PROBE_ARG))
		return PROBE_BASE + (new_mapping_mergeable() == 1);
	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (delegate() || access(CG_D "/memory.ksm", F_OK)) {
		cleanup();
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory.ksm (not samepage)");
	}
	if (!CHECK(start(&k) == 0, "set up")) {
		for (size_t i = 0; i < ARRAY_SIZE(names); i++)
			ktap_result(false, "%s", names[i]);
	} else {
		test_opt_in(&k);
		test_bounds(&k);
		test_own_only(&k);
		test_veto(&k);
	}
	kids_send(&k, 'e');
	CHECK(kids_wait(&k), "children exit");
	cleanup();
	return ktap_finish();
}
