// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_tuned.c - Debian's ksmtuned (4.20150326), unchanged, drives KSM.
 *
 * ksmtuned is a bash script. Every KSM_MONITOR_INTERVAL seconds it sums
 * the RSS ("ps -o rsz=") of the processes whose command line matches
 * "^qemu-system.*-enable-kvm" (pgrep -f): its "committed" memory; "free"
 * is MemFree + Buffers + Cached. With thres = max(MemTotal * COEF / 100,
 * CONST) it stops KSM (run=0) when committed + thres < MemTotal and free
 * > thres; otherwise it starts it (pages_to_scan = npages, sleep_millisecs
 * = KSM_SLEEP_MSEC * 16 GiB / MemTotal, at least 10, then run=1), adding
 * BOOST to npages while free < thres and DECAY (negative) once free >
 * thres, within [NPAGES_MIN, NPAGES_MAX]. It reads /etc/ksmtuned.conf
 * (shell assignments), which this test writes.
 *
 * The pressure is therefore a process named as ksmtuned expects a KVM
 * guest: this program executes itself with the command line
 * "qemu-system-x86_64 -enable-kvm --ksm-tuned-workload N", maps N
 * mergeable pages of 1024 distinct contents and faults them in. No other
 * name would be counted. The threshold is set from what the guest uses
 * now, so that free > thres while idle (ksmtuned keeps KSM off) and the
 * workload's RSS alone is enough to trip it: thres = MemTotal - used - M,
 * workload = used + 2M (M = 32 MiB), with used = MemTotal - free.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define TUNED "/usr/sbin/ksmtuned"
#define CONF "/etc/ksmtuned.conf"
#define PIDFILE "/tmp/ksmtuned.pid"
#define LOGFILE "/tmp/ksmtuned.log"
#define WORKLOAD "--ksm-tuned-workload"
#define SEED 71
#define CONTENTS 1024
#define MARGIN_KB (32 * 1024L)
/* ksmtuned's tuning, as written to its config file. */
#define INTERVAL 1
#define NPAGES_BOOST 2000
#define NPAGES_DECAY (-1000)
#define NPAGES_MIN 1000
#define NPAGES_MAX 4000
#define SLEEP_MSEC 1
/* Known values ksmtuned never writes. */
#define OUR_PAGES 17
#define OUR_SLEEP 999
/* Seconds: ksmtuned acts every INTERVAL, each round a few processes. */
#define TUNED_WAIT 60

static const char *const names[] = {
	"ksmtuned_keeps_ksm_off_when_idle",
	"ksmtuned_starts_ksm_for_qemu_memory",
	"pages_merge_content_intact",
	"ksmtuned_decays_pages_to_scan_when_free",
	"ksmtuned_stops_ksm_when_qemu_exits",
	"ksmtuned_killed_kernel_log_clean",
};

/* The workload: argv = qemu-system-x86_64 -enable-kvm --ksm-tuned-workload N */
static int workload(long pages)
{
	char *p = map_pages(pages), c = 0;

	prctl(PR_SET_NAME, "qemu-system-x86");
	for (long i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, SEED, i % CONTENTS);
	if (merge_pages(p, pages))
		return 1;
	if (write(1, "r", 1) != 1)
		return 1;
	while (read(0, &c, 1) == 1 && c == 'c') {
		long bad = 0;

		for (long i = 0; i < pages; i++)
			bad += !holds_pattern(p + i * page_size, SEED,
					      i % CONTENTS);
		c = bad ? 'x' : 'k';
		if (write(1, &c, 1) != 1)
			return 1;
	}
	return 0;
}

struct child {
	pid_t pid;
	int to, from;
};

static int start_workload(struct child *w, long pages)
{
	int in[2], out[2];
	char n[32], ready = 0;

	if (pipe(in) || pipe(out))
		return -errno;
	snprintf(n, sizeof(n), "%ld", pages);
	w->pid = fork();
	if (w->pid < 0)
		return -errno;
	if (!w->pid) {
		char *argv[] = { "qemu-system-x86_64", "-enable-kvm", WORKLOAD,
				 n, NULL };

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	w->to = in[1];
	w->from = out[0];
	if (read(w->from, &ready, 1) != 1 || ready != 'r')
		return -EIO;
	return 0;
}

static char workload_check(struct child *w)
{
	char c = 'c';

	if (write(w->to, &c, 1) != 1 || read(w->from, &c, 1) != 1)
		return '?';
	return c;
}

static bool workload_stop(struct child *w)
{
	int status = 0;

	close(w->to);
	close(w->from);
	if (waitpid(w->pid, &status, 0) != w->pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ksmtuned's "free": MemFree + Buffers + Cached, in kB. */
static long tuned_free_kb(void)
{
	return meminfo_kb("MemFree") + meminfo_kb("Buffers") +
	       meminfo_kb("Cached");
}

/* Lines of ksmtuned's log from the mark on: the current phase's. */
static long log_mark;

static bool log_has(const char *s)
{
	static char buf[1 << 18];
	FILE *f = fopen(LOGFILE, "r");
	size_t n;

	if (!f)
		return false;
	fseek(f, log_mark, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, s) != NULL;
}

static void log_diag(int max_lines)
{
	FILE *f = fopen(LOGFILE, "r");
	char line[256];
	int n = 0;

	if (!f)
		return;
	fseek(f, log_mark, SEEK_SET);
	while (fgets(line, sizeof(line), f) && n++ < max_lines) {
		line[strcspn(line, "\n")] = '\0';
		ktap_diag("ksmtuned: %s", line);
	}
	fclose(f);
}

static void log_set_mark(void)
{
	struct stat st;

	log_mark = stat(LOGFILE, &st) ? 0 : st.st_size;
}

/* Wait (bounded) until KSM's @name reads @value. */
static bool wait_ksm_value(const char *name, long value, int seconds)
{
	double deadline = monotonic_seconds() + seconds;

	while (ksm_read(name) != value) {
		if (monotonic_seconds() > deadline) {
			ktap_diag("%s is %ld, want %ld after %d s", name,
				  ksm_read(name), value, seconds);
			return false;
		}
		usleep(20000);
	}
	return true;
}

static bool wait_log(const char *s, int seconds)
{
	double deadline = monotonic_seconds() + seconds;

	while (!log_has(s)) {
		if (monotonic_seconds() > deadline) {
			ktap_diag("no \"%s\" in ksmtuned's log after %d s", s,
				  seconds);
			return false;
		}
		usleep(50000);
	}
	return true;
}

static pid_t merging_pid;
static long merging_want;

static long workload_merging(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", merging_pid);
	return read_long(path);
}

static bool workload_merged(void *arg)
{
	return workload_merging() >= merging_want;
}

/* ksmtuned's process group, killed at exit if a check left it running. */
static pid_t tuned_group;

static void kill_tuned_at_exit(void)
{
	if (tuned_group > 0)
		kill(-tuned_group, SIGKILL);
}

/* SIGTERM to ksmtuned's process group, SIGKILL after 10 s; reap it all. */
static bool kill_tuned(pid_t group, pid_t loop)
{
	double deadline = monotonic_seconds() + 10;
	bool loop_reaped = false;
	int sig = SIGTERM;
	pid_t pid;

	if (kill(-group, sig))
		return false;
	tuned_group = 0;
	for (;;) {
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid == loop)
			loop_reaped = true;
		if (pid < 0)
			return loop_reaped;	/* ECHILD: all gone */
		if (pid > 0)
			continue;
		if (sig == SIGTERM && monotonic_seconds() > deadline) {
			ktap_diag("ksmtuned survived SIGTERM");
			sig = SIGKILL;
			kill(-group, sig);
		} else if (monotonic_seconds() > deadline + 10) {
			ktap_diag("a child other than ksmtuned's lives on");
			return false;
		}
		usleep(20000);
	}
}

int main(int argc, char **argv)
{
	long total, used, thres, pages, sleep_ms, npages;
	struct child w = { .pid = 0 };
	double t0 = monotonic_seconds();
	pid_t starter, loop = 0;
	int status;
	FILE *f;

	if (argc == 4 && !strcmp(argv[2], WORKLOAD))
		return workload(atol(argv[3]));

	ktap_plan(ARRAY_SIZE(names));
	if (access(TUNED, X_OK) || access("/bin/bash", X_OK) ||
	    access("/usr/bin/pgrep", X_OK) || access("/usr/bin/ps", X_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "ksmtuned, bash or procps not in the guest");
	if (ksm_read("run") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	ksm_save_settings();

	/* A known state: ksmd stopped, settings ksmtuned never writes. */
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write("pages_to_scan", OUR_PAGES) == 0, "pages_to_scan");
	CHECK(ksm_write("sleep_millisecs", OUR_SLEEP) == 0, "sleep_millisecs");

	total = meminfo_kb("MemTotal");
	used = total - tuned_free_kb();
	thres = total - used - MARGIN_KB;
	pages = (used + 2 * MARGIN_KB) * 1024 / (long)page_size;
	sleep_ms = SLEEP_MSEC * 16L * 1024 * 1024 / total;
	if (sleep_ms <= 10)
		sleep_ms = 10;
	ktap_diag("MemTotal %ld kB, used %ld kB: thres %ld kB, workload %ld pages, sleep %ld ms",
		  total, used, thres, pages, sleep_ms);

	f = fopen(CONF, "w");
	CHECK(f != NULL, "%s: %s", CONF, strerror(errno));
	if (f) {
		fprintf(f, "# written by ksm_tuned\n"
			"KSM_MONITOR_INTERVAL=%d\nKSM_SLEEP_MSEC=%d\n"
			"KSM_NPAGES_BOOST=%d\nKSM_NPAGES_DECAY=%d\n"
			"KSM_NPAGES_MIN=%d\nKSM_NPAGES_MAX=%d\n"
			"KSM_THRES_COEF=0\nKSM_THRES_CONST=%ld\n"
			"PIDFILE=%s\nLOGFILE=%s\nDEBUG=1\n",
			INTERVAL, SLEEP_MSEC, NPAGES_BOOST, NPAGES_DECAY,
			NPAGES_MIN, NPAGES_MAX, thres, PIDFILE, LOGFILE);
		fclose(f);
	}
	unlink(LOGFILE);
	unlink(PIDFILE);

	/*
	 * ksmtuned forks its loop into the background and exits: as the
	 * subreaper we inherit the loop, and its own process group (setsid)
	 * lets us kill it with its sleeps.
	 */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	starter = fork();
	if (!starter) {
		char *argv_t[] = { TUNED, NULL };
		char *envp[] = { "PATH=/usr/sbin:/usr/bin:/bin", "HOME=/",
				 "LC_ALL=C", NULL };

		setsid();
		execve(TUNED, argv_t, envp);
		_exit(127);
	}
	if (starter > 0) {
		tuned_group = starter;
		atexit(kill_tuned_at_exit);	/* runs before the settings' restore */
	}
	CHECK(starter > 0 && waitpid(starter, &status, 0) == starter &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "ksmtuned exits once its loop is in the background");
	loop = read_long(PIDFILE);
	CHECK(loop > 1 && kill(loop, 0) == 0, "loop pid %d", loop);

	/* 1: idle, below the threshold: it stops KSM and tunes nothing. */
	CHECK(wait_log("stop ksm", TUNED_WAIT), "idle round");
	CHECK(log_has("committed 0 "), "nothing committed");
	CHECK(ksm_read("run") == 0, "run %ld", ksm_read("run"));
	CHECK(ksm_read("pages_to_scan") == OUR_PAGES &&
	      ksm_read("sleep_millisecs") == OUR_SLEEP,
	      "untouched: pages_to_scan %ld sleep_millisecs %ld",
	      ksm_read("pages_to_scan"), ksm_read("sleep_millisecs"));
	if (!checks_passed_so_far())
		log_diag(20);
	ktap_result(checks_passed(), "%s", names[0]);

	/* 2: a "qemu" process holding pages committed beyond the threshold. */
	log_set_mark();
	CHECK(start_workload(&w, pages) == 0, "workload started");
	CHECK(wait_ksm_value("run", 1, TUNED_WAIT), "run=1");
	npages = ksm_read("pages_to_scan");
	CHECK(npages >= NPAGES_MIN && npages <= NPAGES_MAX &&
	      npages % 1000 == 0,
	      "pages_to_scan %ld: one of ksmtuned's values", npages);
	CHECK(ksm_read("sleep_millisecs") == sleep_ms,
	      "sleep_millisecs %ld, want %ld", ksm_read("sleep_millisecs"),
	      sleep_ms);
	CHECK(log_has("start ksm"), "logged start");
	if (!checks_passed_so_far())
		log_diag(20);
	ktap_result(checks_passed(), "%s", names[1]);

	/* 3: ksmd, as ksmtuned runs it, merges the workload's pages. */
	merging_pid = w.pid;
	merging_want = pages;
	CHECK(ksm_wait_until(workload_merged, NULL, 20),
	      "ksm_merging_pages %ld of %ld", workload_merging(), pages);
	CHECK(ksm_read("pages_shared") + ksm_read("pages_sharing") >= pages,
	      "shared %ld sharing %ld", ksm_read("pages_shared"),
	      ksm_read("pages_sharing"));
	CHECK(workload_check(&w) == 'k', "content of every page");
	CHECK(ksm_read("run") == 1, "still running");
	ktap_result(checks_passed(), "%s", names[2]);

	/*
	 * 4: merged, the pages are free again while the workload's RSS stays:
	 * ksmtuned keeps KSM on and decays npages down to its minimum.
	 */
	log_set_mark();
	CHECK(wait_ksm_value("pages_to_scan", NPAGES_MIN, TUNED_WAIT),
	      "pages_to_scan decays to %d", NPAGES_MIN);
	CHECK(log_has("decay"), "logged decay");
	CHECK(ksm_read("run") == 1, "run %ld", ksm_read("run"));
	CHECK(workload_check(&w) == 'k', "content of every page");
	if (!checks_passed_so_far())
		log_diag(20);
	ktap_result(checks_passed(), "%s", names[3]);

	/* 5: the "guest" exits: nothing committed, memory free: run=0. */
	log_set_mark();
	CHECK(workload_stop(&w), "workload exits");
	CHECK(wait_ksm_value("run", 0, TUNED_WAIT), "run=0");
	CHECK(ksm_read("pages_to_scan") == NPAGES_MIN,
	      "pages_to_scan %ld left as it was", ksm_read("pages_to_scan"));
	CHECK(log_has("committed 0 "), "nothing committed");
	if (!checks_passed_so_far())
		log_diag(20);
	ktap_result(checks_passed(), "%s", names[4]);

	/* 6: kill its loop and its sleep: its group is the starter's pid. */
	CHECK(kill_tuned(starter, loop), "ksmtuned's loop killed and reaped");
	CHECK(kernel_splats() == 0, "kernel log has %d splat lines",
	      kernel_splats());
	ktap_result(checks_passed(), "%s", names[5]);
	ktap_diag("ksm_tuned took %.1f s", monotonic_seconds() - t0);
	return ktap_finish();
}
