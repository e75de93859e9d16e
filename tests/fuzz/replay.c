/*
 * tests/fuzz/replay.c: main() for a fuzz target built without libFuzzer
 * (spec/design.md "Fuzzing"): LLVMFuzzerTestOneInput once on each file
 * named, or on each file of each directory named (not below it), in name
 * order.  `make fuzz-replay` links it with every target and runs the
 * committed corpus under the ASan build with the ordinary compiler, so
 * that an input that once crashed stays fixed without clang.
 *
 * Each input is read into a buffer of exactly its size, as libFuzzer
 * hands it over, so that ASan sees a read one byte past its end.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on the file at path: 0, or -1 if it cannot be read. */
static int
replay_file(const char *path, size_t size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(size ? size : 1);
	int ok = f && buf && fread(buf, 1, size, f) == size;

	if (f)
		fclose(f);
	if (ok) {
		/* the name first, so that a crash report says which */
		fprintf(stderr, "replay: %s\n", path);
		LLVMFuzzerTestOneInput(buf, size);
	} else {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
	}
	free(buf);
	return ok ? 0 : -1;
}

static int
skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int
main(int argc, char **argv)
{
	int n = 0, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int k;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: no such file '%s'\n", argv[i]);
			bad = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= replay_file(argv[i], (size_t)st.st_size) != 0;
			n++;
			continue;
		}
		if ((k = scandir(argv[i], &names, skip_dots, alphasort)) < 0) {
			fprintf(stderr, "replay: cannot list '%s'\n", argv[i]);
			bad = 1;
			continue;
		}
		for (int j = 0; j < k; j++) {
			size_t len = strlen(argv[i]) + strlen(names[j]->d_name);
			char *path = malloc(len + 2);

			if (path) {
				sprintf(path, "%s/%s", argv[i], names[j]->d_name);
				if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
					bad |= replay_file(path,
							   (size_t)st.st_size)
					       != 0;
					n++;
				}
			}
			free(path);
			free(names[j]);
		}
		free(names);
	}
	printf("%d inputs\n", n);
	return bad;
}
