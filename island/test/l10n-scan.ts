/// <reference types="node" />
// Reads the island's sources with real parsers (the TypeScript compiler API for scripts and
// template expressions, Vue's SFC and template compiler for .vue files) and reports:
//  - every user-visible string that does not pass through t()/n() (issue #34): a template
//    text node with a letter in it; a static aria-label, title, placeholder, alt or label; in a
//    bound one of those or in a `{{ }}` interpolation, a string or template literal that could
//    be shown as it is; in a script, a sentence-like literal (a capital, then two words);
//  - every source string given to t('tamebi', …) / n('tamebi', …) (the German bundle must
//    have each one: test/l10n-bundle.test.ts).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import ts from 'typescript';
import { parse as parseSfc } from '@vue/compiler-sfc';
import { NodeTypes, type AttributeNode, type DirectiveNode, type ElementNode, type RootNode, type TemplateChildNode } from '@vue/compiler-dom';
import { sourceFiles, src } from './sources';

export interface Finding {
  file: string;
  line: number;
  text: string;
}

export interface ScanResult {
  bypasses: Finding[];
  /** t() source strings, and n() as `_singular_::_plural_` (Nextcloud's bundle key). */
  msgids: Set<string>;
}

/** Attributes a person reads or hears. */
const VISIBLE_ATTRS = new Set(['aria-label', 'aria-description', 'aria-placeholder', 'aria-roledescription', 'title', 'placeholder', 'alt', 'label']);
const LETTER = /\p{L}/u;
/** A capital letter, then at least two words: how a sentence for a person looks in code. */
const SENTENCE = /^\s*\p{Lu}[\p{L}'’-]*[\s,:;]+[\p{L}'’-]+\b/u;

export function scanSource(file: string, text: string): ScanResult {
  const result: ScanResult = { bypasses: [], msgids: new Set() };
  if (file.endsWith('.vue')) scanVue(file, text, result);
  else scanScript(file, text, 0, result, 'script');
  return result;
}

function scanVue(file: string, text: string, result: ScanResult): void {
  const { descriptor, errors } = parseSfc(text, { filename: file });
  if (errors.length > 0) throw new Error(`${file}: ${String(errors[0])}`);
  for (const block of [descriptor.script, descriptor.scriptSetup]) {
    if (block) scanScript(file, block.content, block.loc.start.line - 1, result, 'script');
  }
  if (descriptor.template?.ast) walkTemplate(file, descriptor.template.ast, result);
}

function walkTemplate(file: string, node: RootNode | TemplateChildNode, result: ScanResult): void {
  if (node.type === NodeTypes.TEXT) {
    if (LETTER.test(node.content)) result.bypasses.push({ file, line: node.loc.start.line, text: node.content.trim() });
    return;
  }
  if (node.type === NodeTypes.INTERPOLATION) {
    const exp = node.content;
    if (exp.type === NodeTypes.SIMPLE_EXPRESSION) scanScript(file, `(${exp.content})`, exp.loc.start.line - 1, result, 'shown');
    return;
  }
  if (node.type === NodeTypes.ELEMENT) {
    for (const prop of (node as ElementNode).props) scanProp(file, prop, result);
  }
  if ('children' in node) {
    for (const child of node.children as TemplateChildNode[]) walkTemplate(file, child, result);
  }
}

function scanProp(file: string, prop: AttributeNode | DirectiveNode, result: ScanResult): void {
  if (prop.type === NodeTypes.ATTRIBUTE) {
    if (VISIBLE_ATTRS.has(prop.name) && prop.value && LETTER.test(prop.value.content)) {
      result.bypasses.push({ file, line: prop.loc.start.line, text: `${prop.name}="${prop.value.content}"` });
    }
    return;
  }
  const exp = prop.exp;
  if (!exp || exp.type !== NodeTypes.SIMPLE_EXPRESSION) return;
  const arg = prop.arg && prop.arg.type === NodeTypes.SIMPLE_EXPRESSION ? prop.arg.content : '';
  const shown = prop.name === 'bind' && VISIBLE_ATTRS.has(arg);
  // Every expression is read for t() calls; only a shown one is held to "no bare literal".
  scanScript(file, `(${exp.content})`, exp.loc.start.line - 1, result, shown ? 'shown' : 'code');
}

/**
 * `mode`: 'script' flags sentence-like literals anywhere outside t()/n(), except one that is only
 * matched against (a `case` label or an operand of `===`) and translated by a t() call of the
 * same text in the same source: a fixed English sentence from a server, recognised there and
 * shown through t() (errors.ts); 'shown' (an
 * interpolation or a visible attribute's binding) flags any literal with a letter that is not a
 * call's argument or an operand of a comparison; 'code' flags nothing.
 */
function scanScript(file: string, code: string, lineOffset: number, result: ScanResult, mode: 'script' | 'shown' | 'code'): void {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 + lineOffset;
  const translatedHere = new Set<string>();
  const matchedAgainst: Finding[] = [];
  const visit = (node: ts.Node, inTranslation: boolean): void => {
    if (ts.isCallExpression(node) && isTranslateCall(node)) {
      collectMsgid(file, node, lineOf(node), result);
      const [, first] = node.arguments;
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) translatedHere.add(first.text);
      node.arguments.forEach((a) => visit(a, true));
      return;
    }
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    if (!inTranslation && isLiteral(node)) {
      const text = literalText(node);
      const flagged = mode === 'script' ? SENTENCE.test(text) : mode === 'shown' && LETTER.test(text) && !isCallArgumentOrComparison(node);
      if (flagged && mode === 'script' && isMatchedAgainst(node)) matchedAgainst.push({ file, line: lineOf(node), text });
      else if (flagged) result.bypasses.push({ file, line: lineOf(node), text });
    }
    ts.forEachChild(node, (child) => visit(child, inTranslation));
  };
  visit(source, false);
  result.bypasses.push(...matchedAgainst.filter((f) => !translatedHere.has(f.text)));
}

/** A `case` label or an operand of an equality comparison: text compared with, not shown. */
function isMatchedAgainst(node: ts.Node): boolean {
  return ts.isCaseClause(node.parent) || (isCallArgumentOrComparison(node) && ts.isBinaryExpression(node.parent));
}

function isTranslateCall(node: ts.CallExpression): boolean {
  return ts.isIdentifier(node.expression) && (node.expression.text === 't' || node.expression.text === 'n');
}

function isLiteral(node: ts.Node): node is ts.StringLiteral | ts.NoSubstitutionTemplateLiteral | ts.TemplateExpression {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
}

function literalText(node: ts.StringLiteral | ts.NoSubstitutionTemplateLiteral | ts.TemplateExpression): string {
  if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join('…');
  return node.text;
}

function isCallArgumentOrComparison(node: ts.Node): boolean {
  const parent = node.parent;
  if (ts.isCallExpression(parent) && parent.arguments.includes(node as ts.Expression)) return true;
  if (ts.isBinaryExpression(parent)) {
    const op = parent.operatorToken.kind;
    return op === ts.SyntaxKind.EqualsEqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsEqualsToken || op === ts.SyntaxKind.EqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsToken;
  }
  return ts.isElementAccessExpression(parent) || ts.isCaseClause(parent);
}

/** t('tamebi', 'text', …) or n('tamebi', 'one', 'many', …): app id and texts must be literals. */
function collectMsgid(file: string, call: ts.CallExpression, line: number, result: ScanResult): void {
  const name = (call.expression as ts.Identifier).text;
  const [app, first, second] = call.arguments;
  const plain = (a: ts.Expression | undefined) => (a && (ts.isStringLiteral(a) || ts.isNoSubstitutionTemplateLiteral(a)) ? a.text : null);
  if (plain(app) !== 'tamebi') {
    result.bypasses.push({ file, line, text: `${name}() without the app id 'tamebi' as a literal` });
    return;
  }
  const one = plain(first);
  const many = name === 'n' ? plain(second) : '';
  if (one === null || many === null) {
    result.bypasses.push({ file, line, text: `${name}() whose text is not a literal (it cannot be extracted)` });
    return;
  }
  result.msgids.add(name === 'n' ? `_${one}_::_${many}_` : one);
}


/** Scans every source of the island (src/). */
export function scanIsland(): ScanResult {
  const all: ScanResult = { bypasses: [], msgids: new Set() };
  for (const file of sourceFiles()) {
    const one = scanSource(relative(src, file), readFileSync(file, 'utf8'));
    all.bypasses.push(...one.bypasses);
    one.msgids.forEach((id) => all.msgids.add(id));
  }
  return all;
}

