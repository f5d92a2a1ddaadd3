// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_vms.c - two virtual machines in the guest, merged by KSM.
 *
 * Two QEMU processes (software emulation inside the emulated guest) boot
 * the same small Linux image (/guest/vm: a bzImage and an initramfs whose
 * /init is tests/vm/init.c) with "-machine mem-merge=on", which makes
 * QEMU madvise its guest RAM MADV_MERGEABLE, and "-mem-prealloc", which
 * faults all of that RAM in at start: memory a VM never touched is then
 * zero in both, and present, so ksmd sees all of it. Expected: nearly all
 * of both VMs' RAM is saved: what the VMs' kernels never used is zero,
 * and what they used is the same kernel and initramfs booted the same way
 * (nokaslr); only pages that differ between the two boots (timestamps,
 * random state, each VM's own allocations) stay apart. The test measures
 * that bound itself: it hashes every page of both VMs' RAM (through
 * /proc/PID/mem) and counts the pages whose content occurs twice or more.
 * QEMU asks for THPs (MADV_HUGEPAGE) and gets them: KSM splits a THP to
 * merge its subpages, and the split maps zero-filled subpages to the
 * shared zero page (6.12, both kernels). So a RAM page counts as saved
 * when it is a KSM page or the zero page (pagemap and kpagecount of
 * QEMU's RAM mapping); ksm_merging_pages alone counts the first kind.
 *
 * The test waits for both VMs' ready lines, runs ksmd flat out until the
 * saved share stops growing, checks the share of each QEMU's RAM saved
 * and of what could be, that the page holding a
 * buffer VM1 and VM2 filled alike is one KSM page in both QEMUs, that a
 * write in VM1 shows in VM1 only (COW of that KSM page: VM1 gets its own
 * page, VM2 keeps the KSM page and its content), and that both VMs still
 * answer. The QEMUs are powered off from inside, the kernel log checked.
 *
 * Skips when /guest/vm is absent: build-guest.sh packs QEMU and the VM
 * image only with VMS=1.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define QEMU "/usr/bin/qemu-system-x86_64"
#define VM_DIR "/guest/vm"
#define VM_MIB 64
#define STR_(x) #x
#define STR(x) STR_(x)
#define NR_VMS 2
/* Nested emulation boots slowly: bound generously, measure and report. */
#define BOOT_SECONDS 400
#define REPLY_SECONDS 60
#define SHUTDOWN_SECONDS 60
/*
 * Each VM's RAM saved (KSM or zero page): about 92% could be (the rest is
 * unique to one VM), 80% leaves room for a VM's own activity. And of the
 * pages whose content occurs twice or more, 95% must end up saved.
 */
#define MIN_SHARE_PERCENT 80
#define MIN_OF_IDEAL_PERCENT 95
#define ORIGINAL "samepage-vm-original"
#define WRITTEN "samepage-vm-written-1"

static const char *const names[] = {
	"vms_boot_with_mem_merge",
	"vms_ram_merges",
	"vm_buffers_share_one_ksm_page",
	"write_in_one_vm_not_seen_in_other",
	"vms_answer_and_power_off",
	"kernel_log_clean",
};

struct vm {
	int id;
	pid_t pid;
	int to, from;
	char buf[16384];
	size_t len;
	unsigned long ram;	/* address of its RAM in QEMU */
	long ram_pages;
	char ready_sum[32];
	bool exited;
};

static struct vm vms[NR_VMS];

static int vm_start(struct vm *vm, int id)
{
	int in[2], out[2];
	char err[64];

	vm->id = id;
	if (pipe(in) || pipe(out))
		return -errno;
	snprintf(err, sizeof(err), "/tmp/vm%d.stderr", id);
	vm->pid = fork();
	if (vm->pid < 0)
		return -errno;
	if (!vm->pid) {
		char *argv[] = {
			"qemu-system-x86_64", "-machine", "pc,mem-merge=on",
			"-accel", "tcg,tb-size=32", "-m", STR(VM_MIB), "-smp", "1",
			"-mem-prealloc", "-nodefaults", "-no-user-config",
			"-display", "none", "-vga", "none", "-monitor", "none",
			"-serial", "stdio", "-no-reboot",
			"-kernel", VM_DIR "/bzImage",
			"-initrd", VM_DIR "/initramfs.cpio.gz",
			"-append", "console=ttyS0 panic=-1 nokaslr quiet "
				   "lockdep.prove_locking=0",
			NULL };
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in[0], 0);
		dup2(out[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		for (int i = 3; i < 256; i++)
			close(i);
		execv(QEMU, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	vm->to = in[1];
	vm->from = out[0];
	fcntl(vm->from, F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * Read VM output until a line containing @tag arrives (the console also
 * carries the VM kernel's messages); copy what follows the tag into @out.
 */
static bool vm_expect(struct vm *vm, const char *tag, char *out, size_t size,
		      int seconds)
{
	double deadline = monotonic_seconds() + seconds;

	for (;;) {
		char *nl, *hit;
		struct pollfd pfd = { .fd = vm->from, .events = POLLIN };
		ssize_t n;

		while ((nl = memchr(vm->buf, '\n', vm->len))) {
			*nl = '\0';
			hit = strstr(vm->buf, tag);
			if (hit) {
				hit += strlen(tag);
				hit[strcspn(hit, "\r")] = '\0';
				snprintf(out, size, "%s", hit);
			}
			vm->len -= nl + 1 - vm->buf;
			memmove(vm->buf, nl + 1, vm->len);
			if (hit)
				return true;
		}
		if (vm->len == sizeof(vm->buf))
			vm->len = 0;	/* a line too long to matter */
		if (monotonic_seconds() > deadline) {
			ktap_diag("vm%d: no \"%s\" after %d s", vm->id, tag,
				  seconds);
			return false;
		}
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(vm->from, vm->buf + vm->len,
			 sizeof(vm->buf) - vm->len);
		if (n == 0) {
			ktap_diag("vm%d: console closed (QEMU exited?)", vm->id);
			return false;
		}
		if (n > 0)
			vm->len += n;
	}
}

/* Send a one-byte command, return the reply after @tag. */
static bool vm_ask(struct vm *vm, char cmd, const char *tag, char *out,
		   size_t size)
{
	if (write(vm->to, &cmd, 1) != 1)
		return false;
	return vm_expect(vm, tag, out, size, REPLY_SECONDS);
}

/* Find QEMU's guest RAM: the mergeable mapping of VM_MIB MiB. */
static bool vm_find_ram(struct vm *vm)
{
	char path[64], line[512];
	unsigned long start = 0, end = 0, cand = 0;
	bool sized = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", vm->pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			sized = end - start == (unsigned long)VM_MIB << 20;
			cand = start;
			continue;
		}
		if (sized && !strncmp(line, "VmFlags:", 8) &&
		    strstr(line, " mg")) {
			vm->ram = cand;
			vm->ram_pages = ((long)VM_MIB << 20) / page_size;
			break;
		}
	}
	fclose(f);
	return vm->ram != 0;
}

static long pid_long(pid_t pid, const char *file)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	return read_long(path);
}

/* Pages of the VM's RAM present in QEMU (pagemap). */
static long vm_present(struct vm *vm)
{
	long present = 0;

	for (long i = 0; i < vm->ram_pages; i++)
		present += !!(pagemap_entry(vm->pid, (void *)(vm->ram +
					    i * page_size)) & PM_PRESENT);
	return present;
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static uint64_t page_hash(const uint64_t *w, bool *zero)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL, any = 0;

	for (size_t i = 0; i < page_size / 8; i++) {
		h = (h ^ w[i]) * 0x100000001b3ULL;
		any |= w[i];
	}
	*zero = !any;
	return h ^ (h >> 29);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * What KSM can merge at most: the pages of the VMs' RAM whose content
 * occurs at least twice (read through /proc/PID/mem, hashed). -1 on error.
 */
static long mergeable_pages(long *zero)
{
	const long chunk = 256;
	long n = 0, total = 0, dup = 0;
	uint64_t *h;
	char *buf;

	for (int i = 0; i < NR_VMS; i++)
		total += vms[i].ram_pages;
	h = malloc(total * sizeof(*h));
	buf = malloc(chunk * page_size);
	if (!h || !buf)
		return -1;
	*zero = 0;
	for (int i = 0; i < NR_VMS; i++) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", vms[i].pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return -1;
		for (long p = 0; p < vms[i].ram_pages; p += chunk) {
			if (pread(fd, buf, chunk * page_size,
				  vms[i].ram + p * page_size) !=
			    (ssize_t)(chunk * page_size)) {
				close(fd);
				return -1;
			}
			for (long j = 0; j < chunk; j++) {
				bool z;

				h[n++] = page_hash((uint64_t *)(buf +
							j * page_size), &z);
				*zero += z;
			}
		}
		close(fd);
	}
	qsort(h, n, sizeof(*h), cmp_u64);
	for (long i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && h[j] == h[i]; j++)
			;
		if (j - i >= 2)
			dup += j - i;
	}
	free(h);
	free(buf);
	return dup;
}

/* The PFN of the shared zero page, as a read fault maps it. */
static unsigned long zero_pfn(void)
{
	static unsigned long pfn;
	volatile char *p;

	if (!pfn) {
		p = map_unfaulted(1);
		(void)p[0];
		pfn = page_pfn((void *)p);
	}
	return pfn;
}

/*
 * The VM's RAM in QEMU, page by page (pagemap, kpagecount): how many
 * pages are shared, mapped twice or more (KSM pages: QEMU does not fork,
 * so nothing else shares its anonymous pages), how many map the shared
 * zero page (what a THP split makes of a zero-filled subpage). False if
 * unreadable. (kpageflags' KPF_KSM cannot tell: in 6.12 it is set for
 * every anonymous page, fs/proc/page.c tests mapping & PAGE_MAPPING_KSM.)
 */
static bool vm_ram_pages(struct vm *vm, long *ksm, long *zero)
{
	uint64_t *ent = malloc(vm->ram_pages * sizeof(*ent)), count;
	unsigned long zpfn = zero_pfn(), pfn;
	int fd, kfd = open("/proc/kpagecount", O_RDONLY);
	bool ok = false;
	char path[64];

	*ksm = *zero = 0;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", vm->pid);
	fd = open(path, O_RDONLY);
	if (!ent || fd < 0 || kfd < 0 || !zpfn ||
	    pread(fd, ent, vm->ram_pages * sizeof(*ent),
		  vm->ram / page_size * sizeof(*ent)) !=
	    (ssize_t)(vm->ram_pages * sizeof(*ent)))
		goto out;
	for (long i = 0; i < vm->ram_pages; i++) {
		if (!(ent[i] & PM_PRESENT))
			continue;
		pfn = ent[i] & PM_PFN_MASK;
		if (pfn == zpfn) {
			(*zero)++;
			continue;
		}
		if (pread(kfd, &count, sizeof(count), pfn * sizeof(count)) !=
		    sizeof(count))
			goto out;
		*ksm += count >= 2;
	}
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	if (kfd >= 0)
		close(kfd);
	free(ent);
	return ok;
}

/* RAM pages of both VMs that are KSM pages or the zero page. */
static long saved_total(void)
{
	long sum = 0, ksm, zero;

	for (int i = 0; i < NR_VMS; i++)
		if (vm_ram_pages(&vms[i], &ksm, &zero))
			sum += ksm + zero;
	return sum;
}

static unsigned long vm_buffer_pfn(struct vm *vm, unsigned long gpa)
{
	return pid_pfn(vm->pid, (void *)(vm->ram + gpa));
}

static bool vm_gpa(struct vm *vm, unsigned long *gpa)
{
	char reply[64];

	return vm_ask(vm, 'p', "vm: gpa=", reply, sizeof(reply)) &&
	       sscanf(reply, "%lx", gpa) == 1 && *gpa &&
	       *gpa < (unsigned long)VM_MIB << 20;
}

static void vm_stderr_diag(struct vm *vm)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/vm%d.stderr", vm->id);
	f = fopen(path, "r");
	if (!f)
		return;
	for (int n = 0; n < 10 && fgets(line, sizeof(line), f); n++) {
		line[strcspn(line, "\n")] = '\0';
		ktap_diag("vm%d stderr: %s", vm->id, line);
	}
	fclose(f);
}

/* Power off from inside; SIGKILL after SHUTDOWN_SECONDS. */
static bool vm_stop(struct vm *vm)
{
	double deadline = monotonic_seconds() + SHUTDOWN_SECONDS;
	int status = 0;
	pid_t r;

	if (vm->pid <= 0 || vm->exited)
		return true;
	if (write(vm->to, "q", 1) != 1)
		ktap_diag("vm%d: cannot send q", vm->id);
	while ((r = waitpid(vm->pid, &status, WNOHANG)) == 0) {
		if (monotonic_seconds() > deadline) {
			ktap_diag("vm%d: still running, killed", vm->id);
			kill(vm->pid, SIGKILL);
			waitpid(vm->pid, &status, 0);
			vm->exited = true;
			return false;
		}
		usleep(50000);
	}
	vm->exited = true;
	close(vm->to);
	close(vm->from);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ktap_diag("vm%d: QEMU status 0x%x", vm->id, status);
		vm_stderr_diag(vm);
		return false;
	}
	return true;
}

static void kill_vms(void)
{
	for (int i = 0; i < NR_VMS; i++)
		if (vms[i].pid > 0 && !vms[i].exited) {
			kill(vms[i].pid, SIGKILL);
			waitpid(vms[i].pid, NULL, 0);
			vms[i].exited = true;
		}
}

int main(void)
{
	double t0 = monotonic_seconds(), t_boot, t_merge;
	unsigned long gpa[NR_VMS], pfn[NR_VMS], after[NR_VMS];
	char reply[128];
	long merged, prev, scans = 0, stable = 0, share[NR_VMS], ideal, zero = 0;
	struct stat st;
	bool booted = true;

	ktap_plan(ARRAY_SIZE(names));
	if (stat(VM_DIR "/bzImage", &st) || access(QEMU, X_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no QEMU in the guest (build it with VMS=1)");
	if (ksm_read("run") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	ksm_save_settings();
	atexit(kill_vms);

	/* ksmd off while the VMs boot; then flat out over all their RAM. */
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write("pages_to_scan", 5000) == 0, "pages_to_scan");

	/* 1: both boot, RAM found in each QEMU, all of it present. */
	for (int i = 0; i < NR_VMS; i++)
		CHECK(vm_start(&vms[i], i + 1) == 0, "start vm%d", i + 1);
	for (int i = 0; i < NR_VMS; i++) {
		bool ok = vm_expect(&vms[i], "vm: ready ", vms[i].ready_sum,
				    sizeof(vms[i].ready_sum), BOOT_SECONDS);

		CHECK(ok, "vm%d ready", i + 1);
		if (!ok) {
			vm_stderr_diag(&vms[i]);
			booted = false;
		}
	}
	t_boot = monotonic_seconds() - t0;
	ktap_diag("both VMs ready after %.1f s", t_boot);
	for (int i = 0; booted && i < NR_VMS; i++) {
		CHECK(vm_find_ram(&vms[i]), "vm%d: RAM mapping in QEMU", i + 1);
		if (vms[i].ram)
			CHECK(vm_present(&vms[i]) == vms[i].ram_pages,
			      "vm%d: %ld of %ld RAM pages present", i + 1,
			      vm_present(&vms[i]), vms[i].ram_pages);
		ktap_diag("vm%d: pid %d RAM at %#lx, RSS %ld kB", i + 1,
			  vms[i].pid, vms[i].ram,
			  rss_kb(vms[i].pid));
	}
	CHECK(!strcmp(vms[0].ready_sum, vms[1].ready_sum),
	      "buffer checksums %s %s", vms[0].ready_sum, vms[1].ready_sum);
	booted = checks_passed_so_far();
	ktap_result(checks_passed(), "%s", names[0]);
	if (!booted) {
		for (int i = 1; i < (int)ARRAY_SIZE(names) - 1; i++)
			ktap_skip_named(names[i], "the VMs did not boot");
		kill_vms();
		CHECK(kernel_splats() == 0, "kernel log has %d splat lines",
		      kernel_splats());
		ktap_result(checks_passed(), "%s", names[5]);
		return ktap_finish();
	}

	/*
	 * 2: run ksmd until the share of RAM saved stops growing: RAM pages
	 * that are KSM pages, or the zero page (KSM splits QEMU's THPs to
	 * merge them, and the split maps zero-filled subpages to the zero
	 * page). Compared with the RAM and with what could merge at most.
	 */
	ideal = mergeable_pages(&zero);
	ktap_diag("content: %ld of %ld pages occur twice or more (%ld zero); AnonHugePages %ld + %ld kB",
		  ideal, vms[0].ram_pages + vms[1].ram_pages, zero,
		  smaps_kb(vms[0].pid, (void *)vms[0].ram, "AnonHugePages"),
		  smaps_kb(vms[1].pid, (void *)vms[1].ram, "AnonHugePages"));
	CHECK(ideal > 0, "VM memory readable");
	t_merge = monotonic_seconds();
	CHECK(ksm_resume() == 0, "run=1");
	prev = 0;
	/*
	 * Until the share is all that could be, or stops growing for three
	 * scans (THPs may split a few at a time: each pass of ksmd splits
	 * those whose subpages it finds equal), at most 40 scans.
	 */
	while (stable < 3 && scans < 40 &&
	       !(scans >= 2 && prev * 100 >= ideal * 99)) {
		if (!ksm_wait_scans(1)) {
			CHECK(false, "full scan %ld", scans + 1);
			break;
		}
		scans++;
		merged = saved_total();
		ktap_diag("scan %ld (%.1f s): RAM pages merged or zero %ld, shared %ld sharing %ld",
			  scans, monotonic_seconds() - t_merge, merged,
			  ksm_read("pages_shared"), ksm_read("pages_sharing"));
		stable = scans >= 2 && merged <= prev ? stable + 1 : 0;
		if (merged > prev)
			prev = merged;
	}
	t_merge = monotonic_seconds() - t_merge;
	merged = 0;
	for (int i = 0; i < NR_VMS; i++) {
		long ksm = 0, z = 0;

		CHECK(vm_ram_pages(&vms[i], &ksm, &z), "vm%d pagemap", i + 1);
		share[i] = (ksm + z) * 100 / vms[i].ram_pages;
		merged += ksm + z;
		ktap_diag("vm%d: of %ld RAM pages %ld shared (KSM), %ld zero page: %ld%%; ksm_merging_pages %ld, RSS %ld kB, AnonHugePages %ld kB",
			  i + 1, vms[i].ram_pages, ksm, z, share[i],
			  pid_long(vms[i].pid, "ksm_merging_pages"),
			  rss_kb(vms[i].pid),
			  smaps_kb(vms[i].pid, (void *)vms[i].ram,
				   "AnonHugePages"));
		CHECK(share[i] >= MIN_SHARE_PERCENT, "vm%d share %ld%% < %d%%",
		      i + 1, share[i], MIN_SHARE_PERCENT);
	}
	CHECK(merged * 100 >= ideal * MIN_OF_IDEAL_PERCENT,
	      "%ld pages merged or zero, of %ld that could", merged, ideal);
	ktap_diag("stable after %ld full scans, %.1f s: %ld of %ld RAM pages (%ld%%), %ld%% of what could merge; pages_shared %ld pages_sharing %ld",
		  scans, t_merge, merged,
		  vms[0].ram_pages + vms[1].ram_pages,
		  merged * 100 / (vms[0].ram_pages + vms[1].ram_pages),
		  ideal > 0 ? merged * 100 / ideal : 0,
		  ksm_read("pages_shared"), ksm_read("pages_sharing"));
	ktap_result(checks_passed(), "%s", names[1]);

	/* 3: the buffer both VMs filled alike: one KSM page in both QEMUs. */
	for (int i = 0; i < NR_VMS; i++) {
		CHECK(vm_gpa(&vms[i], &gpa[i]), "vm%d: buffer address", i + 1);
		pfn[i] = vm_buffer_pfn(&vms[i], gpa[i]);
		ktap_diag("vm%d: buffer at guest %#lx, host pfn %#lx", i + 1,
			  gpa[i], pfn[i]);
	}
	CHECK(pfn[0] && pfn[0] == pfn[1], "pfns %#lx %#lx", pfn[0], pfn[1]);
	ktap_result(checks_passed(), "%s", names[2]);

	/* 4: write in VM1: VM1 sees it, VM2 keeps the original and the page. */
	CHECK(vm_ask(&vms[0], 'w', "vm: wrote ", reply, sizeof(reply)) &&
	      !strcmp(reply, WRITTEN), "vm1 wrote \"%s\"", reply);
	CHECK(vm_ask(&vms[0], 'r', "vm: buf=", reply, sizeof(reply)) &&
	      !strcmp(reply, WRITTEN), "vm1 reads \"%s\"", reply);
	CHECK(vm_ask(&vms[1], 'r', "vm: buf=", reply, sizeof(reply)) &&
	      !strcmp(reply, ORIGINAL), "vm2 reads \"%s\"", reply);
	CHECK(vm_ask(&vms[1], 's', "vm: sum=", reply, sizeof(reply)) &&
	      !strcmp(reply, vms[1].ready_sum), "vm2 page checksum %s, was %s",
	      reply, vms[1].ready_sum);
	for (int i = 0; i < NR_VMS; i++)
		after[i] = vm_buffer_pfn(&vms[i], gpa[i]);
	CHECK(after[0] && after[0] != pfn[0], "vm1's page %#lx -> %#lx",
	      pfn[0], after[0]);
	CHECK(after[1] == pfn[1], "vm2's page %#lx -> %#lx", pfn[1], after[1]);
	ktap_result(checks_passed(), "%s", names[3]);

	/* 5: both answer, then power off cleanly. */
	for (int i = 0; i < NR_VMS; i++)
		CHECK(vm_ask(&vms[i], 's', "vm: sum=", reply, sizeof(reply)),
		      "vm%d answers", i + 1);
	for (int i = 0; i < NR_VMS; i++)
		CHECK(vm_stop(&vms[i]), "vm%d powers off", i + 1);
	ktap_result(checks_passed(), "%s", names[4]);

	CHECK(kernel_splats() == 0, "kernel log has %d splat lines",
	      kernel_splats());
	ktap_result(checks_passed(), "%s", names[5]);
	ktap_diag("ksm_vms took %.1f s (boot %.1f s, merge %.1f s)",
		  monotonic_seconds() - t0, t_boot, t_merge);
	return ktap_finish();
}
