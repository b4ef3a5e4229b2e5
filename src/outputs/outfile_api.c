/* SPDX-License-Identifier: MIT */
/*
 * outputs/outfile_api.c - the public output file (weft/outfile.h): a
 * handle around the library's own (outputs/outfile.c).
 */
#include <stdlib.h>

#include "core/internal.h"
#include "outputs/outfile.h"
#include "weft/outfile.h"

struct weft_outfile {
	weft__outfile file;
};

int weft_outfile_open(const char *path, int force, int remove_on_signal,
		      weft_outfile **out)
{
	*out = NULL;
	if (path == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no output path");
	weft_outfile *f = calloc(1, sizeof *f);
	if (f == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = weft__outfile_open(&f->file, path, force, remove_on_signal);
	if (rc < 0) {
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int weft_outfile_fd(const weft_outfile *f)
{
	return f->file.fd;
}

int weft_outfile_commit(weft_outfile *f)
{
	int rc = weft__outfile_commit(&f->file);
	free(f);
	return rc;
}

void weft_outfile_abort(weft_outfile *f)
{
	if (f == NULL)
		return;
	weft__outfile_abort(&f->file);
	free(f);
}
