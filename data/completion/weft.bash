# SPDX-License-Identifier: MIT
# bash completion of the weft command. It asks the command itself what to
# offer (the hidden `weft __complete`: src/cli/complete.c), so that it
# never drifts from it: the commands, each command's options (its parser's
# table) and the values of an option (trace formats, convert's outputs,
# --by, --level...); files for TRACE and for the options that take a path.
# Installed as share/bash-completion/completions/weft; or source it.

# Fills COMPREPLY with the words of `list` (one per line) that start with
# `cur`, each with `prefix` before it.
_weft_words()
{
	local list=$1 cur=$2 prefix=$3 word
	while IFS= read -r word; do
		[[ -n $word && $word == "$cur"* ]] && COMPREPLY+=("$prefix$word")
	done <<<"$list"
}

# Fills COMPREPLY with the paths that start with `cur`.
_weft_files()
{
	local IFS=$'\n'
	compopt -o filenames 2>/dev/null
	COMPREPLY+=($(compgen -f -- "$1"))
}

_weft()
{
	local weft=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} opt="" prefix="" values
	local first=1 # the command's word: 2 after "weft --mpi"
	COMPREPLY=()
	[[ ${COMP_WORDS[1]} == --mpi ]] && ((COMP_CWORD > 1)) && first=2
	if ((COMP_CWORD == first)); then
		values=$("$weft" __complete commands 2>/dev/null | cut -f1)
		((first == 1)) && values+=$'\n-h\n--help\n-V\n--version\n--mpi'
		values+=$'\nsync' # run by weft-mpi: not in weft's list
		_weft_words "$values" "$cur" ""
		return 0
	fi
	local cmd=${COMP_WORDS[first]}
	# "--option=value": bash splits it at '=' (COMP_WORDBREAKS) or not.
	if [[ $cur == = ]]; then
		opt=${COMP_WORDS[COMP_CWORD - 1]} cur=""
	elif ((COMP_CWORD >= first + 2)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == = ]]; then
		opt=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == --*=* ]]; then
		opt=${cur%%=*} prefix=${cur%%=*}= cur=${cur#*=}
	elif [[ $cur == -* ]]; then
		_weft_words "$("$weft" __complete options "$cmd" 2>/dev/null)" "$cur" ""
		return 0
	else
		opt=${COMP_WORDS[COMP_CWORD - 1]}
	fi
	# The value of an option: its words, a path, or nothing to offer.
	if [[ $opt == -* ]] && values=$("$weft" __complete values "$cmd" "$opt" 2>/dev/null); then
		if [[ $values == @file ]]; then
			[[ -z $prefix ]] && _weft_files "$cur"
		else
			_weft_words "$values" "$cur" "$prefix"
		fi
		return 0
	fi
	_weft_files "$cur"
	return 0
}

complete -F _weft weft
