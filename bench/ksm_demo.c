// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_demo.c - show KSM at work in the guest: several processes start with
 * the same memory image ("clones", as guests booted from one image), mark it
 * mergeable, and ksmtop (tools/mm/ksmtop.c) shows ksmd merging them live:
 * its settings, CPU and scan rate, the memory saved, the clones. Then each
 * clone writes to its memory and takes private copies, and every clone
 * checks that its content survived.
 *
 * ksm_demo [LOG]: with LOG (the guest's second serial port, which the host
 * saves), a second ksmtop writes a JSON snapshot there every half second
 * for the whole run, from which scripts/demo-plot.sh draws the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define CLONES 6
#define CLONE_MIB 8
#define KSMTOP "/guest/bin/ksmtop"
#define MERGE_LIMIT 300		/* seconds: the demo ends even if KSM does not */
#define HOLD 4			/* seconds of the merged state on the screen */

/* One clone: the shared image, with one page in 16 of its own. */
static int clone_main(void *arg, int i, int cmd, int reply)
{
	size_t pages = CLONE_MIB * 1024 * 1024 / page_size;
	char *mem = map_pages(pages);
	bool written = false;
	char c;

	for (size_t p = 0; p < pages; p++)
		fill_page(mem, p, p % 16 ? 1 : 100 + i);
	if (merge_pages(mem, pages))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		if (c == 'w') {	/* write: take private copies of 64 pages */
			for (size_t p = 1; p <= 64; p++)
				fill_page(mem, p, 200 + i);
			written = true;
		}
		for (size_t p = 0, bad = 0; p < pages; p++) {
			unsigned int seed = p % 16 ? 1 : 100 + i;

			if (written && p >= 1 && p <= 64)
				seed = 200 + i;
			bad += !page_holds(mem, p, seed);
			if (p == pages - 1)
				kid_reply(reply, bad ? 'x' : 'k');
		}
	}
	return 0;
}

/* Start ksmtop with @args (a NULL-terminated list), stdout to @out. */
static pid_t ksmtop_start(const char *out, char *const args[])
{
	pid_t pid;
	int fd;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	if (out) {
		fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		close(fd);
	}
	execv(KSMTOP, args);
	_exit(127);
}

/* Ask ksmtop to stop (it ends after the snapshot it is writing). */
static void ksmtop_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* One ksmtop screen, over one second, without clearing the screen. */
static void ksmtop_once(void)
{
	char *const args[] = { KSMTOP, "--once", "-n", "8", NULL };
	pid_t pid = ksmtop_start(NULL, args);

	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	size_t pages = CLONE_MIB * 1024 * 1024 / page_size;
	long want = (CLONES - 1) * (pages - pages / 16);
	char *const live[] = { KSMTOP, "-d", "1", "-n", "8", "--count",
			       "400", NULL };
	char *const json[] = { KSMTOP, "--json", "-d", "0.5", "-n", "8",
			       "--count", "2000", NULL };
	pid_t logger = 0, screen;
	char replies[CLONES];
	struct kids k;
	double t0, took;

	printf("\nsamepage demo: %d clones of a %d MiB memory image\n",
	       CLONES, CLONE_MIB);
	if (ksm_reset() || ksm_write("pages_to_scan", 100) ||
	    ksm_write("sleep_millisecs", 20)) {
		printf("KSM is not available in this kernel\n");
		return 1;
	}
	/* Smart scan: once merged, ksmd's CPU falls (see the plot). */
	ksm_write("smart_scan", 1);
	if (argc > 1)
		logger = ksmtop_start(argv[1], json);
	ksm_write("run", 0);
	if (kids_start(&k, CLONES, clone_main, NULL) ||
	    !kids_collect(&k, replies)) {
		printf("cannot start the clones\n");
		ksmtop_stop(logger);
		return 1;
	}
	ksm_write("run", 1);
	t0 = monotonic_seconds();
	screen = ksmtop_start(NULL, live);
	while (ksm_read("pages_sharing") < want &&
	       monotonic_seconds() - t0 < MERGE_LIMIT)
		usleep(200000);
	took = monotonic_seconds() - t0;
	sleep(HOLD);
	ksmtop_stop(screen);
	printf("\n%s after %.1f s: pages_sharing %ld of %ld\n",
	       ksm_read("pages_sharing") < want ? "NOT MERGED" : "merged",
	       took, ksm_read("pages_sharing"), want);

	kids_sync(&k, 'c', replies);
	printf("after merging: clone content %s\n",
	       memchr(replies, 'x', CLONES) ? "CORRUPTED" : "intact");
	kids_sync(&k, 'w', NULL);
	kids_sync(&k, 'c', replies);
	printf("each clone wrote 64 pages (copy on write): content %s\n\n",
	       memchr(replies, 'x', CLONES) ? "CORRUPTED" : "intact");
	ksmtop_once();
	kids_sync(&k, 'q', NULL);
	kids_wait(&k);
	ksm_write("run", 2);
	printf("\nclones exited, run=2: pages_shared %ld, pages_sharing %ld\n",
	       ksm_read("pages_shared"), ksm_read("pages_sharing"));
	if (logger > 0) {
		sleep(2);	/* the logger's last snapshots: after run=2 */
		ksmtop_stop(logger);
	}
	return 0;
}
