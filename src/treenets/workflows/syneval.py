"""Targeted syntactic evaluation (Marvin & Linzen 2018) of language models (`treenets syneval`: `evaluate_models`).

An item is correct when the model gives the grammatical sentence a strictly higher whole-sentence
log-probability (`SentenceScore.total`: every word and the closing boundary token, read after the opening
one) than the sentence it is compared with, as LM_syneval compares whole sentences. NPI triples give two
comparisons (see `treenets.data.syneval`). Items with a word outside the model's vocabulary (read as
`<unk>`) are counted, and the accuracy is also given on the fully covered items alone, since a PTB model
reads 30 of the test words as `<unk>` and can then not tell, e.g., `admire` from `admires`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from treenets.core.console import note
from treenets.core.devices import resolve_device
from treenets.core.files import json_text, output_file, refuse_output_over_inputs
from treenets.data.syneval import CaseItems, load_case, select_cases, templates_folder
from treenets.predictors.lm import LanguageModel
from treenets.report import report_beside, write_report


@dataclass
class ComparisonResult:
    """The grammatical sentence against one other sentence of every item of a case."""

    against: str  # "ungrammatical", or "intrusive" for the second sentence of an NPI triple
    pairs: int
    oov_pairs: int  # pairs where either sentence has a word read as <unk>
    correct: int
    covered_correct: int  # correct pairs among the fully covered ones

    @property
    def covered_pairs(self) -> int:
        return self.pairs - self.oov_pairs

    @property
    def accuracy(self) -> float:
        return self.correct / self.pairs

    @property
    def covered_accuracy(self) -> float | None:
        """Accuracy on the pairs without <unk>; None when there are none."""
        return self.covered_correct / self.covered_pairs if self.covered_pairs else None

    def to_dict(self) -> dict:
        return {"against": self.against, "pairs": self.pairs, "oov_pairs": self.oov_pairs,
                "covered_pairs": self.covered_pairs, "correct": self.correct, "covered_correct": self.covered_correct,
                "accuracy": self.accuracy, "covered_accuracy": self.covered_accuracy}


@dataclass
class CaseResult:
    name: str
    label: str
    comparisons: list[ComparisonResult]  # the headline one first

    def to_dict(self) -> dict:
        return {"case": self.name, "label": self.label, "comparisons": [c.to_dict() for c in self.comparisons]}


@dataclass
class SynevalResult:
    cases: list[CaseResult]
    sentences: int  # distinct sentences scored, as the model reads them
    word_types: list[str]  # every word type of the test sentences, as the model reads them
    unknown_types: list[str]  # those outside the vocabulary
    seconds: float  # time spent scoring

    def to_dict(self) -> dict:
        return {"sentences": self.sentences, "word_types": len(self.word_types),
                "unknown_types": self.unknown_types, "seconds": self.seconds,
                "cases": [c.to_dict() for c in self.cases]}


def evaluate_syneval(lm: LanguageModel, cases: list[CaseItems], batch_size: int = 256,
                     progress: bool = True) -> SynevalResult:
    """Count the correct items of each case and comparison.

    Sentences are scored as the model reads them (tokenised and lower-cased already, so read pretokenized;
    unknown tokens as `<unk>`): one sentence of each distinct reading, in batches cut from the readings sorted by
    length, so that two sentences the model cannot tell apart get the very same score and tie (a wrong answer)
    whatever batch they fall in.
    """
    vocab = lm.vocab
    readings, unknown_words, types = {}, {}, set()
    for sentence in dict.fromkeys(s for case in cases for item in case.items for s in item):
        tokens = lm.tokenize(sentence, pretokenized=True)
        unknown = [t for t in tokens if t not in vocab]
        readings[sentence] = tuple(vocab.unk if t not in vocab and vocab.unk else t for t in tokens)
        unknown_words[sentence] = unknown
        types.update(tokens)
    representative = {}
    for sentence, form in readings.items():
        representative.setdefault(form, sentence)
    forms = sorted(representative, key=lambda form: (len(form), form))
    totals = {}
    start = time.perf_counter()
    with tqdm(total=len(forms), unit="sent", desc="syneval", leave=False, disable=None if progress else True) as bar:
        for first in range(0, len(forms), batch_size):
            chunk = forms[first : first + batch_size]
            scores = lm.score([representative[f] for f in chunk], pretokenized=True)
            totals.update(zip(chunk, (score.total for score in scores)))
            bar.update(len(chunk))
    seconds = time.perf_counter() - start
    results = []
    for case in cases:
        comparisons = []
        for position, against in enumerate(case.case.against, start=1):
            pairs = oov = correct = covered_correct = 0
            for item in case.items:
                good, bad = item[0], item[position]
                right = totals[readings[good]] > totals[readings[bad]]
                unknown = bool(unknown_words[good] or unknown_words[bad])
                pairs += 1
                oov += unknown
                correct += right
                covered_correct += right and not unknown
            comparisons.append(ComparisonResult(against, pairs, oov, correct, covered_correct))
        comparisons.sort(key=lambda c: c.against != case.case.headline)  # the paper's row first
        results.append(CaseResult(case.case.name, case.case.label, comparisons))
    unknown_types = {t for words in unknown_words.values() for t in words}
    return SynevalResult(results, len(forms), sorted(types), sorted(unknown_types), seconds)


def format_table(checkpoints: list[str], results: list[SynevalResult]) -> str:
    """Cases as rows, each model's accuracy on all pairs, on the covered pairs and its count of pairs with
    <unk> side by side (`[k]` numbers the models); an NPI case's second comparison on its own row."""
    first = results[0].cases
    labels = [case.label if i == 0 else f"  vs. {c.against}"
              for case in first for i, c in enumerate(case.comparisons)]
    width = max(len("case"), *(len(label) for label in labels))
    lines = [f"[{k}] {path}" for k, path in enumerate(checkpoints, start=1)]
    lines.append(f"{'':{width}} {'':>7}" + "".join(f" {f'[{k}]':^21}" for k in range(1, len(results) + 1)))
    lines.append(f"{'case':{width}} {'pairs':>7}" + f" {'all':>6} {'covered':>7} {'oov':>6}" * len(results))
    rows = [[c for case in result.cases for c in case.comparisons] for result in results]
    for label, comparisons in zip(labels, zip(*rows)):
        cells = "".join(f" {c.accuracy:6.2f} {_fraction(c.covered_accuracy):>7} {c.oov_pairs:6d}" for c in comparisons)
        lines.append(f"{label:{width}} {comparisons[0].pairs:7d}{cells}")
    return "\n".join(lines)


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def evaluate_models(refs: list[str], cases: list[str] | None = None, limit: int | None = None,
                    batch_size: int = 256, output: str | None = None, device="auto", root=None) -> None:
    """`treenets syneval`: score the `cases` (names of Table 3; all for None) with each language model of `refs`
    (`evaluate_syneval`; with `limit`, the first `limit` items of each condition) and print the table of
    accuracies and each model's vocabulary coverage; with `output`, every count and accuracy as JSON in that
    file and an HTML report beside it."""
    if output:  # (a model folder is refused by the command; a checkpoint file is an input too)
        html = report_beside(output)
        for target in (output, html):
            refuse_output_over_inputs(output_file(target, "--output"),
                                      {f"the checkpoint of model {k}": ref for k, ref in enumerate(refs, 1)
                                       if Path(ref).is_file()}, "--output")
    selected = [load_case(case, root, limit) for case in select_cases(cases)]
    device = resolve_device(device, "--device")
    items = sum(len(case.items) for case in selected)
    first = f", the first {limit} of each condition" if limit else ""
    print(f"syneval: {templates_folder(root)}: {len(selected)} case(s), {items:,} items{first}")
    results, notes = [], []
    for k, ref in enumerate(refs, start=1):
        result = evaluate_syneval(LanguageModel.load(ref, device=device), selected, batch_size)
        results.append(result)
        note(f"syneval: [{k}] {ref}: {result.sentences:,} sentences scored in {result.seconds:.1f} s")
        notes.append(f"[{k}] {len(result.unknown_types)} of {len(result.word_types)} test word types not in the "
                     f"vocabulary (read as <unk>); {result.sentences:,} sentences scored")
    print(format_table(refs, results))
    for line in notes:
        print(line)
    if output:
        document = {"data": str(templates_folder(root)), "limit": limit,
                    "checkpoints": [{"checkpoint": str(ref), **result.to_dict()} for ref, result in zip(refs, results)]}
        Path(output).write_text(json_text(document, indent=1))
        print(f"output: {output}")
        print(f"report: {write_report(html.parent, 'treenets syneval', syneval=document, name=html.name)}")
