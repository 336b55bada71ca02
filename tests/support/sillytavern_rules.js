// Runs SillyTavern's own rules (read from its files at test time, never copied here) in node's
// vm: the example-dialogue parser of openai.js and the keyword rule of world-info.js.
// Usage: node sillytavern_rules.js <sillytavern root>   (JSON request on stdin, JSON on stdout)
//   {"examples": [{"text": mes_example, "user": name1, "char": name2}, ...],
//    "books": [[{uid, key, keysecondary, selective, selectiveLogic, ...}], ...],
//    "scans": [{"book": 0, "messages": ["Name: text", ...newest first], "depth": 2}, ...]}
//   (a scan may carry its own "entries" instead of naming one of "books")
// -> {"examples": [[{role, content, name}, ...], ...], "scans": [[uid, ...], ...]}
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const root = process.argv[2];
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');

// The declaration that starts with `head` in `source`, up to its matching closing brace (the
// files are plain modules: braces inside their strings and regexes are balanced).
function cut(source, head) {
    const start = source.indexOf(head);
    if (start < 0) throw new Error(`not found in SillyTavern's files: ${head}`);
    let depth = 0;
    for (let i = source.indexOf('{', start); i < source.length; i++) {
        if (source[i] === '{') depth++;
        else if (source[i] === '}' && --depth === 0) return source.slice(start, i + 1).replace(/^export /, '');
    }
    throw new Error(`unbalanced: ${head}`);
}

const worldInfo = read('public/scripts/world-info.js');
const openai = read('public/scripts/openai.js');
const utils = read('public/scripts/utils.js');

const context = vm.createContext({
    console: { log() {}, debug() {}, warn() {}, error() {} },
    // SillyTavern's defaults (world-info.js): case-insensitive, whole words off
    world_info_case_sensitive: false,
    world_info_match_whole_words: false,
    MAX_SCAN_DEPTH: 1000,
    scan_state: { NONE: 0, INITIAL: 1, RECURSION: 2, MIN_ACTIVATIONS: 3 },
    selected_group: null,
    name1: 'User',
    name2: 'Char',
});
vm.runInContext(
    [
        cut(utils, 'export function escapeRegex('),
        cut(worldInfo, 'export function parseRegexFromString('),
        cut(worldInfo, 'export const world_info_logic = {') + ';',
        cut(worldInfo, 'class WorldInfoBuffer {'),
        cut(openai, 'export function parseExampleIntoIndividual('),
        'this.WorldInfoBuffer = WorldInfoBuffer;',
    ].join('\n'),
    context,
);
// Its secondary-key logic is a function inside checkWorldInfo: cut out and run as written,
// with the names it closes over given.
const secondary = vm.runInContext(
    `(function (entry, textToScan, buffer, selectiveLogic) {
        const substituteParams = (s) => s;
        const log = () => {};
        ${cut(worldInfo, 'function matchSecondaryKeys() {')}
        return matchSecondaryKeys();
    })`,
    context,
);

// What setOpenAIMessageExamples does to a card's mes_example (script.js splits it into blocks
// at <START>, with {{user}} and {{char}} substituted).
function examples(text, user, char) {
    context.name1 = user;
    context.name2 = char;
    const filled = text.replace(/\{\{user\}\}/gi, user).replace(/\{\{char\}\}/gi, char);
    const blocks = filled.split(/<START>/i).slice(1).map((b) => '<START>' + b);
    return blocks.map((b) =>
        context.parseExampleIntoIndividual(b.replace(/<START>/i, '{Example Dialogue:}').replace(/\r/gm, ''), true),
    );
}

// Which entries fire on `messages` (newest first) at scan depth `depth`: the primary keys,
// then the secondary-key logic, as checkWorldInfo does for an entry with keys (no recursion).
function scan(entries, messages, depth) {
    const buffer = new context.WorldInfoBuffer(messages);
    const fired = [];
    for (const entry of entries) {
        const scanned = { scanDepth: depth, ...entry };
        const text = buffer.get(scanned, context.scan_state.INITIAL);
        if (!entry.key.find((key) => key && buffer.matchKeys(text, key.trim(), scanned))) continue;
        const hasSecondary = entry.selective && Array.isArray(entry.keysecondary) && entry.keysecondary.length;
        if (!hasSecondary || secondary(scanned, text, buffer, entry.selectiveLogic ?? 0)) fired.push(entry.uid);
    }
    return fired;
}

const request = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = {
    examples: (request.examples || []).map((e) => examples(e.text, e.user, e.char)),
    scans: (request.scans || []).map((s) =>
        scan(s.entries ?? request.books[s.book], s.messages, s.depth ?? 2)),
};
process.stdout.write(JSON.stringify(out));
