/* SPDX-License-Identifier: MIT */
/*
 * Bad snapshot directories must give a clear error naming the file, or a
 * warning, never a crash.  Builds each case in a fresh temporary directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coresight.h"
#include "cssnapshot.h"
#include "cs_etm_info.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "snapshot.h"

static int failures;
static char dir[256];

static void put(const char *name, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

static void puts_file(const char *name, const char *text)
{
	put(name, text, strlen(text));
}

static void fresh(void)
{
	char cmd[300];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			exit(1);
	}
	strcpy(dir, "/tmp/ptd_csbad.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
}

/* A valid ETMv4 snapshot, for the cases to break one piece of. */
static const char *snap_ini =
	"[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\n"
	"device1=etm.ini\n\n[trace]\nmetadata=trace.ini\n";
static const char *cpu_ini =
	"[device]\nname=cpu_0\nclass=core\ntype=Cortex-A53\n\n[regs]\n"
	"PC(size:64)=0x400000\n\n[dump1]\nfile=code.bin\naddress=0x400000\n";
static const char *etm_ini =
	"[device]\nname=ETM_0\nclass=trace_source\ntype=ETM4\n\n[regs]\n"
	"TRCCONFIGR(0x004)=0x00000000\nTRCTRACEIDR(0x010)=0x10\n"
	"TRCIDR0(0x078)=0x28000EA1\nTRCIDR1(0x079)=0x4100F403\n"
	"TRCIDR2(0x07A)=0x00000488\n";
static const char *trace_ini =
	"[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\n"
	"file=trace.bin\nformat=coresight\n\n[source_buffers]\nETM_0=ETB_0\n\n"
	"[core_trace_sources]\ncpu_0=ETM_0\n";

static void good_snapshot(void)
{
	uint8_t code[64], trace[4096];

	memset(code, 0, sizeof(code));
	/* random-looking bytes: the decoder must survive garbage */
	for (size_t i = 0; i < sizeof(trace); i++)
		trace[i] = (uint8_t)((i * 2654435761u) >> 13);
	fresh();
	puts_file("snapshot.ini", snap_ini);
	puts_file("cpu_0.ini", cpu_ini);
	puts_file("etm.ini", etm_ini);
	puts_file("trace.ini", trace_ini);
	put("code.bin", code, sizeof(code));
	put("trace.bin", trace, sizeof(trace));
}

/* Opens dir: expects rc (0 or an error) and, if given, text in the error
 * or the warnings.  With rc 0, decodes to the end. */
static void expect(const char *what, int want_rc, const char *text)
{
	struct imgstore *st = imgstore_new();
	struct backend *b = NULL;
	char err[512] = "";
	int rc = snapshot_open(dir, st, 1, &b, err, sizeof(err));
	int found = !text || strstr(err, text) != NULL;

	if (b) {
		struct ptd_event ev;
		long n = 0;
		int r;

		for (size_t i = 0; i < coresight_warning_count(b); i++)
			if (text && strstr(coresight_warning(b, i), text))
				found = 1;
		while ((r = b->next(b, &ev)) == 0 && n < 10000000)
			n++;
		if (r != PTD_ERR_END) {
			printf("FAIL %s: decode ended with %d (%s)\n", what, r,
			       b->errmsg(b));
			failures++;
		}
		b->destroy(b);
	}
	if (rc != want_rc || !found) {
		printf("FAIL %s: rc %d (want %d), message '%s' (want '%s')\n",
		       what, rc, want_rc, err, text ? text : "");
		failures++;
	} else {
		printf("ok   %s: %s\n", what, rc ? err : "opened");
	}
	imgstore_free(st);
}

int main(void)
{
	good_snapshot();
	expect("valid snapshot, garbage trace", 0, NULL);

	fresh();
	expect("no snapshot.ini", PTD_ERR_IO, "snapshot.ini");

	good_snapshot();
	puts_file("snapshot.ini", "[snapshot]\nversion=1.0\nthis line is bad\n");
	expect("bad ini syntax", PTD_ERR_FORMAT, "snapshot.ini:3");

	good_snapshot();
	puts_file("snapshot.ini", "version=1.0\n");
	expect("key before section", PTD_ERR_FORMAT, "snapshot.ini:1");

	good_snapshot();
	puts_file("snapshot.ini", "[snapshot\n");
	expect("unclosed section", PTD_ERR_FORMAT, "snapshot.ini:1");

	good_snapshot();
	puts_file("snapshot.ini", "[snapshot]\nversion=2.0\n[device_list]\n"
		  "d=cpu_0.ini\n[trace]\nmetadata=trace.ini\n");
	expect("unknown version", PTD_ERR_UNSUPPORTED, "version");

	good_snapshot();
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/etm.ini", dir);
		unlink(p);
	}
	expect("device ini missing", PTD_ERR_IO, "etm.ini");

	good_snapshot();
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/code.bin", dir);
		unlink(p);
	}
	expect("dump file missing", 0, "code.bin");

	good_snapshot();
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/trace.bin", dir);
		unlink(p);
	}
	expect("trace buffer file missing", PTD_ERR_IO, "trace.bin");

	good_snapshot();
	puts_file("cpu_0.ini", "[device]\nname=cpu_0\ntype=Cortex-A53\n"
		  "[dump1]\nfile=code.bin\naddress=zero\n");
	expect("dump address not a number", PTD_ERR_FORMAT, "cpu_0.ini");

	good_snapshot();
	puts_file("cpu_0.ini", "[device]\nname=cpu_0\ntype=Cortex-A53\n"
		  "[dump1]\naddress=0x1000\n");
	expect("dump without file", PTD_ERR_FORMAT, "cpu_0.ini");

	good_snapshot();
	puts_file("etm.ini", "[device]\nname=ETM_0\ntype=ETM4\n[regs]\n"
		  "TRCCONFIGR=0\n");
	expect("register missing", PTD_ERR_NO_TRACE, "TRCTRACEIDR");

	good_snapshot();
	puts_file("cpu_0.ini", "[device]\nname=cpu_0\ntype=Pentium\n");
	expect("unknown core type", PTD_ERR_NO_TRACE, "Pentium");

	good_snapshot();
	puts_file("trace.ini", "[trace_buffers]\nbuffers=buffer0\n");
	expect("buffer section missing", PTD_ERR_FORMAT, "buffer0");

	good_snapshot();
	puts_file("trace.ini", "[trace_buffers]\nbuffers=buffer0\n[buffer0]\n"
		  "name=ETB_0\nfile=trace.bin\n[source_buffers]\nSTM_0=ETB_0\n");
	puts_file("etm.ini", "[device]\nname=STM_0\ntype=STM\n[regs]\n"
		  "STMTCSR=0\n");
	expect("STM only", PTD_ERR_UNSUPPORTED, "STM/ITM");

	good_snapshot();
	put("trace.bin", "", 0);
	expect("empty trace buffer", 0, NULL);

	/* cs_etm_info: truncated and corrupt private areas. */
	{
		uint8_t priv[8 * 16];
		struct cs_etm_info info;
		char err[256];
		int rc;

		memset(priv, 0, sizeof(priv));
		priv[0] = 1;                 /* version 1 */
		priv[8] = 200;               /* 200 CPUs: cannot fit */
		rc = cs_etm_info_parse(priv, sizeof(priv), &info, err, sizeof(err));
		printf("%s cs_etm_info too many CPUs: %s\n",
		       rc == PTD_ERR_CORRUPT ? "ok  " : "FAIL", err);
		failures += rc != PTD_ERR_CORRUPT;
		priv[8] = 1;
		memset(priv + 24, 0x40, 8);  /* ETMv4 magic */
		priv[40] = 100;              /* 100 params: beyond the end */
		rc = cs_etm_info_parse(priv, sizeof(priv), &info, err, sizeof(err));
		printf("%s cs_etm_info params beyond end: %s\n",
		       rc == PTD_ERR_TRUNCATED ? "ok  " : "FAIL", err);
		failures += rc != PTD_ERR_TRUNCATED;
		rc = cs_etm_info_parse(priv, 10, &info, err, sizeof(err));
		printf("%s cs_etm_info short header: %s\n",
		       rc == PTD_ERR_TRUNCATED ? "ok  " : "FAIL", err);
		failures += rc != PTD_ERR_TRUNCATED;
		memset(priv + 24, 0x77, 8);  /* unknown magic */
		rc = cs_etm_info_parse(priv, sizeof(priv), &info, err, sizeof(err));
		printf("%s cs_etm_info bad magic: %s\n",
		       rc == PTD_ERR_CORRUPT ? "ok  " : "FAIL", err);
		failures += rc != PTD_ERR_CORRUPT;
	}

	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			failures++;
	}
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
