// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_nosysfs.c - a kernel built without CONFIG_SYSFS has no
 * /sys/kernel/mm/ksm to start ksmd with, so mainline starts it with run=1
 * and its default pages_to_scan and sleep_millisecs. Duplicate pages must
 * merge with no setting touched; the wait is bounded by time only, as
 * full_scans cannot be read. For make matrix's sysfs-off configuration:
 * with sysfs, ksmd starts stopped and this test fails by design.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

int main(void)
{
	const int n = 64;
	char *p = map_pages(n);
	double deadline;

	ktap_plan(1);
	CHECK(access(KSM_DIR "run", F_OK) != 0, "no " KSM_DIR "run here");
	for (int i = 0; i < n; i++)
		fill_pattern(p + i * page_size, 61, 0);
	CHECK(merge_pages(p, n) == 0, "madvise");
	deadline = monotonic_seconds() + KSM_WAIT_SECONDS;
	while (self_merging_pages() != n && monotonic_seconds() < deadline)
		usleep(100 * 1000);
	CHECK(self_merging_pages() == n, "ksm_merging_pages %ld, want %d",
	      self_merging_pages(), n);
	for (int i = 0; i < n; i++)
		CHECK(holds_pattern(p + i * page_size, 61, 0), "page %d", i);
	p[0] ^= 1;	/* copy on write, then back */
	p[0] ^= 1;
	for (int i = 0; i < n; i++)
		CHECK(holds_pattern(p + i * page_size, 61, 0), "page %d after COW", i);
	munmap(p, n * page_size);
	ktap_result(checks_passed(), "ksmd_runs_without_sysfs");
	return ktap_finish();
}
