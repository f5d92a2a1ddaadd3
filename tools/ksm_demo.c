// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_demo.c - show KSM at work in the guest: several processes start with
 * the same memory image ("clones", as guests booted from one image), mark it
 * mergeable, and a live table follows pages_shared, pages_sharing and the
 * memory saved as ksmd merges them. Then one clone writes to its memory and
 * takes private copies, and every clone checks that its content survived.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define CLONES 6
#define CLONE_MIB 8

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

static void table_row(double t0)
{
	long shared = ksm_read("pages_shared");
	long sharing = ksm_read("pages_sharing");

	printf("%7.1f %10ld %12ld %13ld %12.1f\n", now() - t0,
	       ksm_read("full_scans"), shared, sharing,
	       sharing * (double)page_size / (1 << 20));
}

int main(void)
{
	size_t pages = CLONE_MIB * 1024 * 1024 / page_size;
	long want = (CLONES - 1) * (pages - pages / 16);
	char replies[CLONES];
	struct kids k;
	double t0;

	printf("\nsamepage demo: %d clones of a %d MiB memory image\n",
	       CLONES, CLONE_MIB);
	if (ksm_reset() || ksm_write("pages_to_scan", 2000) ||
	    ksm_write("sleep_millisecs", 20)) {
		printf("KSM is not available in this kernel\n");
		return 1;
	}
	if (kids_start(&k, CLONES, clone_main, NULL))
		return 1;
	for (int i = 0; i < CLONES; i++)
		if (read(k.from_kid[i], &replies[i], 1) != 1)
			return 1;
	printf("\n%7s %10s %12s %13s %12s\n", "time s", "full_scans",
	       "pages_shared", "pages_sharing", "saved MiB");
	t0 = now();
	while (ksm_read("pages_sharing") < want && now() - t0 < 300) {
		table_row(t0);
		usleep(500000);
	}
	table_row(t0);

	kids_sync(&k, 'c', replies);
	printf("\nafter merging: clone content %s\n",
	       memchr(replies, 'x', CLONES) ? "CORRUPTED" : "intact");
	kids_sync(&k, 'w', NULL);
	kids_sync(&k, 'c', replies);
	printf("each clone wrote 64 pages (copy on write): content %s\n",
	       memchr(replies, 'x', CLONES) ? "CORRUPTED" : "intact");
	table_row(t0);
	kids_sync(&k, 'q', NULL);
	kids_wait(&k);
	ksm_write("run", 2);
	printf("\nclones exited, run=2: pages_shared %ld, pages_sharing %ld\n",
	       ksm_read("pages_shared"), ksm_read("pages_sharing"));
	return 0;
}
