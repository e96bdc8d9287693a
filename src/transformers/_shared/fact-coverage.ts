/**
 * Whether a text has a fact its data lacks: what decides if json-extract and pattern-extract keep
 * the text beside the data they read from it (see facts.ts for what a fact is).
 */
import type { Budget } from '../budget.js';
import { eachFact, type FactSink } from './facts.js';

/** Distinct words of a text looked up in the data's JSON before the data's facts are collected. */
const QUICK_WORDS = 8;
/** Facts of a text looked at for those words, at most (a text of repeated facts stops early). */
const QUICK_FACTS = 256;

/**
 * Whether `text` has a fact that `data` lacks; `data` is a JSON value (nothing JSON.stringify
 * leaves out) and `json` its JSON.stringify. Collecting the data's facts costs about as much as
 * building the data, so a few words of the text are looked up in the JSON first: a word that
 * occurs nowhere in it, case aside, is a fact the data lacks, since JSON spells out every key
 * and string and never escapes a letter. Only when no such word turns up are the data's facts
 * collected and the text checked against them.
 */
export function hasFactBeyond(text: string, data: unknown, json: string, budget?: Budget): boolean {
  return absentWord(text, json, budget) || eachFact(text, missingFrom(collect(data, budget)), budget);
}

/** Whether one of the first few words of `text` occurs nowhere in `json`, case aside. */
function absentWord(text: string, json: string, budget?: Budget): boolean {
  let lower: string | undefined;
  const tried = new Set<string>();
  let looked = 0;
  let absent = false;
  eachFact(
    text,
    {
      text(fact) {
        if (++looked > QUICK_FACTS || tried.size >= QUICK_WORDS) return true;
        if (!isAsciiWord(fact) || tried.has(fact)) return false;
        tried.add(fact);
        lower ??= json.toLowerCase();
        absent = !lower.includes(fact);
        return absent;
      },
      number: () => ++looked > QUICK_FACTS,
    },
    budget,
  );
  return absent;
}

/**
 * A word fact of ASCII letters only. For those, lower-casing the whole JSON lower-cases the word
 * as it stands alone: only other letters change their case by what surrounds them (a final Σ).
 */
function isAsciiWord(fact: string): boolean {
  for (let i = 0; i < fact.length; i++) {
    const c = fact.charCodeAt(i);
    if (c < 0x61 || c > 0x7a) return false;
  }
  return true;
}

/** The facts of a value: numbers by value (no `#8` strings to build and hash), the rest as text. */
interface Known {
  texts: Set<string>;
  numbers: Set<number>;
}

function collect(value: unknown, budget?: Budget): Known {
  const known: Known = { texts: new Set(), numbers: new Set() };
  eachFact(value, { text: (f) => void known.texts.add(f), number: (n) => void known.numbers.add(n) }, budget);
  return known;
}

/**
 * A sink that stops at the first fact `known` lacks. A Set holds numbers apart exactly when they
 * print apart (0 and -0 are one), so numbers by value are the same facts as numbers as text.
 */
function missingFrom(known: Known): FactSink {
  return { text: (f) => !known.texts.has(f), number: (n) => !known.numbers.has(n) };
}
