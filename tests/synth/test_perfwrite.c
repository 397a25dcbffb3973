/* SPDX-License-Identifier: MIT */
/* perfwrite: layout facts perf 6.1 needs, and rejection of bad use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfwrite.h"
#include "ptdecode.h"
#include "util.h"

static int fails;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); fails++; } } while (0)

static void make_attr(uint8_t *a, uint32_t size, uint64_t sample_type)
{
	memset(a, 0, 136);
	a[0] = 1;                       /* software */
	memcpy(a + 4, &size, 4);
	a[8] = 9;                       /* dummy */
	memcpy(a + 24, &sample_type, 8);
	a[42] = 1 << 2;                 /* sample_id_all (bit 18) */
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char path[4096], err[256];
	uint8_t attr[136];
	uint64_t id = 7, st = PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_IDENTIFIER;
	struct perfwrite *w;
	struct perfwrite_sid sid = { 11, 12, 1000, 7, 0, 0 };
	struct util_map m;
	struct stat sb;
	uint8_t pay[13] = { 0x02, 0x82 };

	snprintf(path, sizeof(path), "%s/perfwrite-test.data", dir);

	/* attr.size 136 is rejected (perf 6.1 cannot read it). */
	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	make_attr(attr, 136, st);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "dummy:u") == PTD_ERR_INVAL);
	CHECK(perfwrite_close(w, err, sizeof(err)) == PTD_ERR_INVAL && strstr(err, "128"));

	/* Different sample_types are rejected; so are attrs after records. */
	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	make_attr(attr, 128, st);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "dummy:u") == 0);
	make_attr(attr, 128, st | PD_SAMPLE_CPU);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "x") == PTD_ERR_INVAL);
	perfwrite_close(w, err, sizeof(err));

	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	make_attr(attr, 128, st);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "dummy:u") == 0);
	CHECK(perfwrite_comm(w, &sid, 11, 12, "abc", 1) == 0);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "late") == PTD_ERR_INVAL);
	perfwrite_close(w, err, sizeof(err));

	/* A good file: check the layout. */
	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "dummy:u") == 0);
	CHECK(perfwrite_comm(w, &sid, 11, 12, "abc", 1) == 0);
	CHECK(perfwrite_auxtrace(w, pay, sizeof(pay), 0, 1, 0, 12, 0) == 0);
	CHECK(perfwrite_feat_string(w, PD_FEAT_ARCH, "x86_64") == 0);
	CHECK(perfwrite_close(w, err, sizeof(err)) == 0);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK(util_map_file(path, &m, err, sizeof(err)) == 0);
	if (m.data) {
		uint64_t attr_size = util_le64(m.data + 16);
		uint64_t data_off = util_le64(m.data + 40), data_size = util_le64(m.data + 48);
		uint64_t feats = util_le64(m.data + 72);
		const uint8_t *comm = m.data + data_off, *aux, *ft;
		CHECK(!memcmp(m.data, "PERFILE2", 8));
		CHECK(util_le64(m.data + 8) == 104);
		CHECK(attr_size == 128 + 16);
		CHECK(util_le64(m.data + 32) == attr_size);
		/* COMM: header 8 + pid/tid 8 + "abc\0" padded to 8 + tid,time,identifier */
		CHECK(util_le32(comm) == 3 && util_le16(comm + 6) == 8 + 8 + 8 + 24);
		CHECK(util_le64(comm + 32) == 1000 && util_le64(comm + 40) == 7);
		aux = comm + util_le16(comm + 6);
		CHECK(util_le32(aux) == 71 && util_le16(aux + 6) == 48);
		CHECK(util_le64(aux + 8) == 16);          /* payload padded to 8 */
		CHECK(feats == (1ull << 6 | 1ull << 12 | 1ull << 18));
		/* The feature table follows the data directly; index entry
		 * size = AUXTRACE header size (48). */
		ft = m.data + data_off + data_size;
		CHECK(data_off + data_size + 3 * 16 <= m.size);
		if (data_off + data_size + 3 * 16 <= m.size) {
			uint64_t aoff = util_le64(ft + 32), asz = util_le64(ft + 40);
			CHECK(asz == 24 && aoff + asz <= m.size);
			if (aoff + asz <= m.size) {
				CHECK(util_le64(m.data + aoff) == 1);
				CHECK(util_le64(m.data + aoff + 8) == (uint64_t)(aux - m.data));
				CHECK(util_le64(m.data + aoff + 16) == 48);
			}
		}
		util_unmap(&m);
	}
	unlink(path);
	if (!fails)
		printf("perfwrite: all checks passed\n");
	return fails ? 1 : 0;
}
