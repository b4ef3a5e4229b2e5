#!/bin/sh
# SPDX-License-Identifier: MIT
# Turns data/ovni-event-signatures.tsv into C initialisers for the table in
# src/formats/ovni/ovni_signatures.c. Input columns: model, model_id,
# model_version, mcv, jumbo, fields, role, partner. Comment lines start
# with '#'; the first other line is the column header.
set -eu
awk -F '\t' '
function cstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
/^#/ { next }
!header { header = 1; next }
NF >= 5 {
	printf "{ %s, %s, %s, %s, %d, %s, %s, %s },\n", cstr($1), "\x27" $2 "\x27", cstr($3), cstr($4), $5, cstr($6), cstr($7), cstr($8)
}' "$1"
