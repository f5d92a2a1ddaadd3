// SPDX-License-Identifier: GPL-2.0
/*
 * init.c - /init of the small VMs that tests/ksm_vms.c boots inside the
 * test guest (nested QEMU). Static, no library beyond libc. It mounts
 * devtmpfs and proc, puts its serial console in raw mode, fills a
 * page-aligned buffer with a marker (so that the buffer is an anonymous
 * page of the same content in every VM), prints a ready line and then
 * answers one-byte commands, one reply line each, all prefixed "vm: ":
 *   r   "vm: buf=<marker>"        the buffer's marker
 *   w   "vm: wrote <marker>"      writes a new marker into the buffer, in place
 *   p   "vm: gpa=<hex>"           guest-physical address of the buffer
 *   s   "vm: sum=<hex>"           checksum of the whole buffer page
 *   q   powers the VM off
 * Anything else (newlines included) is ignored.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define ORIGINAL "samepage-vm-original"
#define WRITTEN "samepage-vm-written"

static char buf[4096] __attribute__((aligned(4096)));
static int con = 1;

static void say(const char *line)
{
	if (write(con, line, strlen(line)) < 0)
		_exit(1);
}

static unsigned long long buffer_gpa(void)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent),
		  (off_t)((uintptr_t)buf / 4096 * sizeof(ent))) != sizeof(ent))
		ent = 0;
	close(fd);
	if (!(ent & (1ULL << 63)))
		return 0;
	return (ent & ((1ULL << 55) - 1)) * 4096;
}

static unsigned long long buffer_sum(void)
{
	unsigned long long h = 1469598103934665603ULL;

	for (size_t i = 0; i < sizeof(buf); i++)
		h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
	return h;
}

int main(void)
{
	struct termios t;
	unsigned int writes = 0;
	char c, line[128];

	mkdir("/dev", 0755);
	mkdir("/proc", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	con = open("/dev/ttyS0", O_RDWR | O_NOCTTY);
	if (con < 0)
		con = open("/dev/console", O_RDWR | O_NOCTTY);
	if (con < 0)
		return 1;
	if (tcgetattr(con, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(con, TCSANOW, &t);
	}
	/* Written, not left in .bss: an anonymous page, the same in every VM. */
	memset(buf, 0, sizeof(buf));
	strcpy(buf, ORIGINAL);
	for (size_t i = 64; i < sizeof(buf); i++)
		buf[i] = (char)('a' + i % 26);
	snprintf(line, sizeof(line), "vm: ready %llx\n", buffer_sum());
	say(line);
	for (;;) {
		ssize_t n = read(con, &c, 1);

		if (n < 0)
			continue;
		if (n == 0) {
			sleep(1);
			continue;
		}
		switch (c) {
		case 'r':
			snprintf(line, sizeof(line), "vm: buf=%.63s\n", buf);
			say(line);
			break;
		case 'w':
			writes++;
			snprintf(buf, 64, "%s-%u", WRITTEN, writes);
			snprintf(line, sizeof(line), "vm: wrote %.63s\n", buf);
			say(line);
			break;
		case 'p':
			snprintf(line, sizeof(line), "vm: gpa=%llx\n",
				 buffer_gpa());
			say(line);
			break;
		case 's':
			snprintf(line, sizeof(line), "vm: sum=%llx\n",
				 buffer_sum());
			say(line);
			break;
		case 'q':
			sync();
			reboot(RB_POWER_OFF);
			break;
		}
	}
}
