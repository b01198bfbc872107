# SPDX-License-Identifier: MIT
# cmake/embed_lua.cmake — embed the Lua scripts of src/*/*.lua into the library.
#
# Run in script mode by the build (see the add_custom_command in CMakeLists.txt):
#
#   cmake -DDLOCK_SOURCE_DIR=<repo> -DDLOCK_OUTPUT_DIR=<build>/generated
#         [-DDLOCK_SCRIPT_LIST=<file>] -P cmake/embed_lua.cmake
#
# DLOCK_SCRIPT_LIST names a file holding the scripts to embed, one path relative to
# DLOCK_SOURCE_DIR per line (the configure step writes it from its own glob, so the
# build's dependencies and the embedded set always agree). Without it the script globs
# src/*/*.lua itself.
#
# Writes <out>/dlock_scripts.h and <out>/dlock_scripts.c:
#   - one enum id per script, DLOCK__SCRIPT_<FOLDER>_<FILE>, sorted by folder then file
#     name so ids are stable (src/core/renew_hash.lua -> DLOCK__SCRIPT_CORE_RENEW_HASH,
#     name "core/renew_hash");
#   - dlock__scripts[id] = { name, text, len, unstored_keys, commands } with the text as a
#     C string literal, one source line per C line, and len its length in bytes (checked at
#     compile time); unstored_keys and commands are below;
#   - with no scripts at all, only DLOCK__SCRIPT_COUNT = 0: the table is declared only
#     when DLOCK__HAVE_SCRIPTS is defined, so no zero-size array ever exists.
# Nothing reads files at run time.
#
# Preludes. Redis scripts cannot load one another, so helpers several scripts need (exact
# 64-bit arithmetic, the checked read of a count) are written once, each in
# src/core/lua/<name>.lua (outside the src/*/*.lua glob: a prelude is no script of its
# own), and put in front of every script that asks for them with a line
#
#   -- uses: <name> [<name> ...]
#
# in its header comment (the comment and blank lines before its first line of code). A
# prelude may ask for others the same way; each comes once, after those it uses. The
# embedded text is the preludes, then the script: still one Lua chunk whose `local
# function` helpers are defined before the script's first line. Redis counts the
# preludes' lines in its error messages: the comment above each text in dlock_scripts.c
# says by how many lines the script's own begin later. A script that calls or defines a
# prelude's helper without asking for that prelude stops the build.
#
# What each KEYS[i] is, as data. Every line of a script's header comment that starts
# "-- KEYS[" declares a key and carries one tag:
#
#   -- KEYS[i]     [stored]   <what it is>      a key Redis keeps
#   -- KEYS[i]     [unstored] <what it is>      never stored: a channel, a key base the script
#                                               builds names from, a key a Cluster client
#                                               never makes the script touch
#   -- KEYS[1..n]  [stored]   <what they are>   a batch of stored keys
#
# The build turns the tags into dlock__scripts[id].unstored_keys (bit i: KEYS[i] is
# [unstored]), which a Cluster client passes undeclared (src/core/net/script.c says why). A
# declaration without a tag or with another word in its place, an index outside 1..31 or
# declared twice, and a script with no declaration at all stop the build: what the Cluster
# client does cannot hang on a typo in a comment.
#
# What each script calls, as data. dlock__scripts[id].commands lists, lower-case, sorted and
# once each, every command the script's text (its preludes included) calls:
#
#   redis.call('cmd', ...)  redis.pcall('cmd', ...)        the command written out
#   local function f(...)  ...redis.pcall(...)...  end     a helper that passes its
#   f('cmd', ...)                                          arguments on: its callers name it
#
# (`dlock doctor` asks the ACL about each; scripts/acl-rule.py reads the same calls off the
# same sources with the same rules, and unit_script_commands checks that the two agree.) A
# call whose command is not a single-quoted word, outside such a helper, and a command that
# cmake/redis_script_commands.txt does not list (a misspelling, a command no script may run)
# stop the build.

cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED DLOCK_SOURCE_DIR OR NOT DEFINED DLOCK_OUTPUT_DIR)
  message(FATAL_ERROR "embed_lua.cmake: pass -DDLOCK_SOURCE_DIR=... and -DDLOCK_OUTPUT_DIR=...")
endif()

# ---- the set of scripts -------------------------------------------------------------
set(rel_paths "")
if(DEFINED DLOCK_SCRIPT_LIST AND NOT DLOCK_SCRIPT_LIST STREQUAL "")
  file(STRINGS "${DLOCK_SCRIPT_LIST}" rel_paths)
else()
  file(GLOB abs_paths "${DLOCK_SOURCE_DIR}/src/*/*.lua")
  foreach(p IN LISTS abs_paths)
    file(RELATIVE_PATH r "${DLOCK_SOURCE_DIR}" "${p}")
    list(APPEND rel_paths "${r}")
  endforeach()
endif()

# Sort by folder, then by file name within the folder (a plain sort of "folder/file"
# would put "lock-x/" before "lock/").
set(folders "")
foreach(r IN LISTS rel_paths)
  if(NOT r MATCHES "^src/([A-Za-z0-9_-]+)/([A-Za-z0-9_.-]+)\\.lua$")
    message(FATAL_ERROR "embed_lua.cmake: '${r}' is not src/<folder>/<name>.lua with "
                        "letters, digits, '_', '-' or '.' only in its name")
  endif()
  list(APPEND folders "${CMAKE_MATCH_1}")
  list(APPEND "files_of_${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}")
endforeach()
list(REMOVE_DUPLICATES folders)
list(SORT folders)

set(scripts "") # entries "<folder>/<stem>"
foreach(folder IN LISTS folders)
  list(SORT "files_of_${folder}")
  foreach(stem IN LISTS "files_of_${folder}")
    list(APPEND scripts "${folder}/${stem}")
  endforeach()
endforeach()
list(LENGTH scripts count)

# ---- helpers --------------------------------------------------------------------------
# The bytes are read as hex (file(READ) in text mode drops '\r' and stops at NUL) and each
# byte maps to its spelling inside a C string literal: printable ASCII and UTF-8 bytes
# as themselves, '\\' '"' TAB CR as escapes, other control bytes as 3-digit octal (so a
# following digit is never absorbed). The newline byte (0a) ends a C line.
set(hex_digits 0 1 2 3 4 5 6 7 8 9 a b c d e f)
foreach(code RANGE 0 255)
  math(EXPR hi "${code} / 16")
  math(EXPR lo "${code} % 16")
  list(GET hex_digits ${hi} h1)
  list(GET hex_digits ${lo} h2)
  if(code EQUAL 9)
    set(spelling "\\t")
  elseif(code EQUAL 13)
    set(spelling "\\r")
  elseif(code EQUAL 34)
    set(spelling "\\\"")
  elseif(code EQUAL 92)
    set(spelling "\\\\")
  elseif(code LESS 32 OR code EQUAL 127)
    math(EXPR o1 "${code} / 64")
    math(EXPR o2 "(${code} / 8) % 8")
    math(EXPR o3 "${code} % 8")
    set(spelling "\\${o1}${o2}${o3}")
  else()
    string(ASCII ${code} spelling)
  endif()
  set("byte_${h1}${h2}" "${spelling}")
endforeach()

# ---- preludes -------------------------------------------------------------------------
set(prelude_dir "${DLOCK_SOURCE_DIR}/src/core/lua")

# The names on the "-- uses:" lines of the header comment of the Lua file at path.
function(uses_of path out_var)
  file(READ "${path}" text)
  string(REGEX MATCH "^([ \t]*(--[^\n]*)?\n)*" header "${text}")
  string(REGEX MATCHALL "(^|\n)-- uses:[^\n]*" markers "${header}")
  set(names "")
  foreach(marker IN LISTS markers)
    string(REGEX REPLACE "^\n?-- uses:" "" marker "${marker}")
    string(REGEX MATCHALL "[^ \t]+" words "${marker}")
    list(APPEND names ${words})
  endforeach()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

# Appends to the caller's `preludes` the preludes `names` (asked for by `user`), each
# after the preludes it uses itself and each once. `chain` is the preludes being added
# further up, so one that comes to use itself is refused instead of recursing for ever.
function(add_preludes names user chain)
  foreach(name IN LISTS names)
    if(NOT name MATCHES "^[a-z0-9_]+$")
      message(FATAL_ERROR "embed_lua.cmake: ${user} uses '${name}': a prelude's name is "
                          "lower-case letters, digits and '_' (src/core/lua/<name>.lua)")
    endif()
    if(name IN_LIST preludes)
      continue()
    endif()
    if(name IN_LIST chain)
      string(REPLACE ";" " -> " cycle "${chain};${name}")
      message(FATAL_ERROR "embed_lua.cmake: preludes that use each other: ${cycle}")
    endif()
    set(path "${prelude_dir}/${name}.lua")
    if(NOT EXISTS "${path}")
      message(FATAL_ERROR "embed_lua.cmake: ${user} uses '${name}', but there is no "
                          "src/core/lua/${name}.lua")
    endif()
    uses_of("${path}" own)
    set(deeper ${chain} ${name})
    add_preludes("${own}" "src/core/lua/${name}.lua" "${deeper}")
    list(APPEND preludes "${name}")
  endforeach()
  set(preludes "${preludes}" PARENT_SCOPE)
endfunction()

# The bytes of each prelude as hex and its number of lines; it must end with a newline,
# so the script after it starts on a line of its own.
function(read_prelude name)
  file(READ "${prelude_dir}/${name}.lua" hex HEX)
  if(NOT hex MATCHES "0a$")
    message(FATAL_ERROR "embed_lua.cmake: src/core/lua/${name}.lua must end with a newline")
  endif()
  string(REGEX MATCHALL ".." bytes "${hex}")
  list(FILTER bytes INCLUDE REGEX "^0a$")
  list(LENGTH bytes lines)
  set("prelude_hex_${name}" "${hex}" PARENT_SCOPE)
  set("prelude_lines_${name}" "${lines}" PARENT_SCOPE)
endfunction()

# The helpers each prelude defines (its `local function` names). A script that calls one
# without asking for its prelude would fail only when it runs (a nonexistent global), and
# one that defines its own copy is what the preludes are there to prevent: the build
# refuses both (see check_prelude_calls).
set(all_preludes "")
file(GLOB prelude_paths "${prelude_dir}/*.lua")
foreach(path IN LISTS prelude_paths)
  get_filename_component(name "${path}" NAME_WE)
  list(APPEND all_preludes "${name}")
  file(STRINGS "${path}" defs REGEX "^local function [A-Za-z_][A-Za-z0-9_]*")
  foreach(def IN LISTS defs)
    string(REGEX MATCH "^local function ([A-Za-z_][A-Za-z0-9_]*)" _ "${def}")
    list(APPEND "helpers_of_${name}" "${CMAKE_MATCH_1}")
  endforeach()
endforeach()

# Stops the build when src/<script>.lua names a helper of a prelude it does not use.
function(check_prelude_calls script used_preludes)
  file(READ "${DLOCK_SOURCE_DIR}/src/${script}.lua" text)
  foreach(name IN LISTS all_preludes)
    if(name IN_LIST used_preludes)
      continue()
    endif()
    foreach(helper IN LISTS "helpers_of_${name}")
      if(text MATCHES "(^|[^A-Za-z0-9_.:])${helper}[ \t]*\\(")
        message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua calls or defines ${helper}, "
                            "a helper of src/core/lua/${name}.lua: put the line "
                            "'-- uses: ${name}' in its header comment instead")
      endif()
    endforeach()
  endforeach()
endfunction()

# Sets out_var to the unstored_keys mask of src/<script>.lua from its header's tags (above).
function(unstored_keys_of script out_var)
  file(READ "${DLOCK_SOURCE_DIR}/src/${script}.lua" text)
  string(REGEX MATCH "^([ \t]*(--[^\n]*)?\n)*" header "${text}")
  string(REGEX MATCHALL "(^|\n)-- KEYS\\[[^\n]*" declarations "${header}")
  if(declarations STREQUAL "")
    message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua declares no KEYS: its header "
                        "needs a '-- KEYS[i]  [stored|unstored] ...' line for each key")
  endif()
  set(mask 0)
  set(declared "")
  foreach(line IN LISTS declarations)
    string(REGEX REPLACE "^\n" "" line "${line}")
    if(line MATCHES "^-- KEYS\\[1\\.\\.n\\][ \t]+\\[stored\\]([ \t]|$)")
      list(APPEND declared "1..n")
    elseif(line MATCHES "^-- KEYS\\[([1-9][0-9]?)\\][ \t]+\\[(stored|unstored)\\]([ \t]|$)")
      set(index "${CMAKE_MATCH_1}")
      set(tag "${CMAKE_MATCH_2}")
      if(index GREATER 31 OR index IN_LIST declared)
        message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua: '${line}': KEYS[${index}] "
                            "is declared twice or is past KEYS[31]")
      endif()
      list(APPEND declared "${index}")
      if(tag STREQUAL "unstored")
        math(EXPR mask "${mask} | (1 << ${index})")
      endif()
    else()
      message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua: '${line}': a KEYS line of the "
                          "header is '-- KEYS[i]  [stored] ...' or '-- KEYS[i]  [unstored] ...' "
                          "(or '-- KEYS[1..n]  [stored] ...')")
    endif()
  endforeach()
  if("1..n" IN_LIST declared AND NOT declared STREQUAL "1..n")
    message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua declares KEYS[1..n] beside "
                        "single KEYS")
  endif()
  math(EXPR mask "${mask}" OUTPUT_FORMAT HEXADECIMAL)
  set(${out_var} "${mask}" PARENT_SCOPE)
endfunction()

# The commands a script may call (see above): the list's lines that are not comments.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/redis_script_commands.txt" known_commands REGEX "^[a-z]")

# Sets out_var to the sorted commands src/<script>.lua calls, its preludes' text included.
function(commands_of script used_preludes out_var)
  set(text "")
  foreach(name IN LISTS used_preludes)
    file(READ "${prelude_dir}/${name}.lua" prelude)
    string(APPEND text "${prelude}")
  endforeach()
  file(READ "${DLOCK_SOURCE_DIR}/src/${script}.lua" own)
  string(APPEND text "${own}")
  set(where "src/${script}.lua")
  if(NOT used_preludes STREQUAL "")
    string(REPLACE ";" ", " names "${used_preludes}")
    string(APPEND where " (or its preludes ${names})")
  endif()

  # helpers that pass their arguments on: "local function f(...)" whose body calls (...)
  set(forwarders "")
  string(REGEX MATCHALL "local function [A-Za-z_][A-Za-z0-9_]*\\(\\.\\.\\.\\)" defs "${text}")
  foreach(def IN LISTS defs)
    string(FIND "${text}" "${def}" at)
    string(SUBSTRING "${text}" ${at} -1 rest)
    string(FIND "${rest}" "\nend" end)
    string(SUBSTRING "${rest}" 0 ${end} body)
    if(body MATCHES "redis\\.p?call\\([ \t]*\\.\\.\\.[ \t]*\\)")
      string(REGEX REPLACE "^local function ([A-Za-z_][A-Za-z0-9_]*).*$" "\\1" name "${def}")
      list(APPEND forwarders "${name}")
    endif()
  endforeach()

  # every redis.call( must name its command, or be a forwarder's (...)
  string(REGEX MATCHALL "redis\\.p?call\\([ \t\n]*[^ \t\n][^,)]*" calls "${text}")
  set(found "")
  foreach(call IN LISTS calls)
    if(call MATCHES "^redis\\.p?call\\([ \t\n]*'([A-Za-z]+)'[ \t\n]*$")
      string(TOLOWER "${CMAKE_MATCH_1}" cmd)
      list(APPEND found "${cmd}")
    elseif(NOT (call MATCHES "\\(\\.\\.\\.$" AND NOT forwarders STREQUAL ""))
      message(FATAL_ERROR "embed_lua.cmake: ${where}: '${call}...': write the command as a "
                          "single-quoted word (redis.call('get', ...)), or pass it through a "
                          "local function f(...) whose callers do")
    endif()
  endforeach()
  foreach(name IN LISTS forwarders)
    string(REGEX MATCHALL "(^|[^A-Za-z0-9_.:])${name}\\([ \t\n]*'[A-Za-z]+'" uses "${text}")
    foreach(use IN LISTS uses)
      string(REGEX REPLACE "^.*'([A-Za-z]+)'$" "\\1" cmd "${use}")
      string(TOLOWER "${cmd}" cmd)
      list(APPEND found "${cmd}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES found)
  list(SORT found)
  foreach(cmd IN LISTS found)
    if(NOT cmd IN_LIST known_commands)
      message(FATAL_ERROR "embed_lua.cmake: ${where} calls '${cmd}', which is no command a "
                          "script may run on Redis 7.0 (cmake/redis_script_commands.txt): a "
                          "misspelling?")
    endif()
  endforeach()
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

# "??x" can be a trigraph in ISO C (-std=c11): break every pair of question marks.
function(break_trigraphs in out_var)
  set(s "${in}")
  string(FIND "${s}" "??" at)
  while(NOT at EQUAL -1)
    string(REPLACE "??" "?\\?" s "${s}")
    string(FIND "${s}" "??" at)
  endwhile()
  set(${out_var} "${s}" PARENT_SCOPE)
endfunction()

# ---- generate -------------------------------------------------------------------------
# The comment is a // one: "src/*/*.lua" inside /* */ would end the comment early.
set(banner "// generated from src/*/*.lua and the preludes they use (src/core/lua/*.lua) by cmake/embed_lua.cmake; do not edit\n")

set(ids "")
set(seen_ids "")
set(c_defs "")
set(c_table "")
set(c_checks "")
foreach(script IN LISTS scripts)
  string(REGEX MATCH "^([^/]+)/(.+)$" _ "${script}")
  set(folder "${CMAKE_MATCH_1}")
  set(stem "${CMAKE_MATCH_2}")

  string(MAKE_C_IDENTIFIER "${folder}_${stem}" ident)
  string(TOUPPER "DLOCK__SCRIPT_${ident}" id)
  string(TOLOWER "script_${ident}" var)
  if(id IN_LIST seen_ids)
    message(FATAL_ERROR "embed_lua.cmake: src/${script}.lua gives the id ${id}, "
                        "already taken by another script: rename one of them")
  endif()
  list(APPEND seen_ids "${id}")
  if(ids STREQUAL "")
    set(ids "${id} = 0")
  else()
    string(APPEND ids ", ${id}")
  endif()

  set(preludes "")
  uses_of("${DLOCK_SOURCE_DIR}/src/${script}.lua" used)
  add_preludes("${used}" "src/${script}.lua" "")
  check_prelude_calls("${script}" "${preludes}")
  set(hex "")
  set(offset 0)
  foreach(name IN LISTS preludes)
    if(NOT DEFINED "prelude_hex_${name}")
      read_prelude("${name}")
    endif()
    string(APPEND hex "${prelude_hex_${name}}")
    math(EXPR offset "${offset} + ${prelude_lines_${name}}")
  endforeach()
  file(READ "${DLOCK_SOURCE_DIR}/src/${script}.lua" script_hex HEX)
  string(APPEND hex "${script_hex}")
  string(LENGTH "${hex}" hex_len)
  math(EXPR len "${hex_len} / 2") # bytes
  # A list of two-digit hex items: safe from the ';' and '[' ']' of Lua text.
  string(REGEX MATCHALL ".." bytes "${hex}")

  set(body "")
  set(line "")
  set(line_open FALSE)
  foreach(b IN LISTS bytes)
    if(b STREQUAL "0a")
      break_trigraphs("${line}" line)
      string(APPEND body "\n    \"${line}\\n\"")
      set(line "")
      set(line_open FALSE)
    else()
      string(APPEND line "${byte_${b}}")
      set(line_open TRUE)
    endif()
  endforeach()
  if(line_open)
    break_trigraphs("${line}" line)
    string(APPEND body "\n    \"${line}\"")
  endif()
  if(body STREQUAL "")
    set(body "\n    \"\"")
  endif()

  set(origin "src/${script}.lua")
  if(NOT preludes STREQUAL "")
    string(REPLACE ";" ", " names "${preludes}")
    string(APPEND origin " after the preludes ${names} (src/core/lua/): its line L is "
                         "line L + ${offset} here")
  endif()
  string(APPEND c_defs "/* ${origin} */\nstatic const char ${var}[] =${body};\n\n")
  unstored_keys_of("${script}" unstored)
  commands_of("${script}" "${preludes}" commands)
  set(words "")
  foreach(cmd IN LISTS commands)
    string(APPEND words "\"${cmd}\", ")
  endforeach()
  string(APPEND c_defs "static const char *const ${var}_commands[] = {${words}NULL};\n\n")
  string(APPEND c_table
         "    [${id}] = {\"${script}\", ${var}, ${len}, ${unstored}u, ${var}_commands},\n")
  string(APPEND c_checks
         "_Static_assert(sizeof(${var}) - 1 == ${len}, \"src/${script}.lua: length mismatch\");\n")
endforeach()

if(count EQUAL 0)
  set(enum_body "DLOCK__SCRIPT_COUNT = 0")
else()
  set(enum_body "${ids}, DLOCK__SCRIPT_COUNT")
endif()

set(h "${banner}")
string(APPEND h "#ifndef DLOCK_SCRIPTS_H\n")
string(APPEND h "#define DLOCK_SCRIPTS_H\n")
string(APPEND h "#include <stddef.h>\n")
string(APPEND h "typedef struct dlock__script_source {\n")
string(APPEND h "    const char *name;\n")
string(APPEND h "    const char *text;\n")
string(APPEND h "    size_t len;\n")
string(APPEND h "    unsigned unstored_keys; /* bit i: its header tags KEYS[i] [unstored] */\n")
string(APPEND h "    /* the commands it calls, lower-case, sorted, NULL-terminated */\n")
string(APPEND h "    const char *const *commands;\n")
string(APPEND h "} dlock__script_source;\n")
string(APPEND h "enum dlock__script_id { ${enum_body} };\n")
if(count GREATER 0)
  string(APPEND h "#define DLOCK__HAVE_SCRIPTS 1\n")
endif()
string(APPEND h "#ifdef DLOCK__HAVE_SCRIPTS\n")
string(APPEND h "extern const dlock__script_source dlock__scripts[DLOCK__SCRIPT_COUNT];\n")
string(APPEND h "#endif\n")
string(APPEND h "#endif\n")

set(c "${banner}")
string(APPEND c "#include \"dlock_scripts.h\"\n\n")
if(count GREATER 0)
  string(APPEND c "${c_defs}")
  string(APPEND c "const dlock__script_source dlock__scripts[DLOCK__SCRIPT_COUNT] = {\n")
  string(APPEND c "${c_table}")
  string(APPEND c "};\n\n")
  string(APPEND c "${c_checks}")
else()
  string(APPEND c "/* no Lua scripts yet: keep the translation unit non-empty */\n")
  string(APPEND c "typedef int dlock__no_scripts;\n")
endif()

# Rewrite only what changed, so an unchanged script set recompiles nothing (Ninja
# restats custom command outputs; Make just runs this again next time, which is cheap).
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

file(MAKE_DIRECTORY "${DLOCK_OUTPUT_DIR}")
write_if_changed("${DLOCK_OUTPUT_DIR}/dlock_scripts.h" "${h}")
write_if_changed("${DLOCK_OUTPUT_DIR}/dlock_scripts.c" "${c}")
