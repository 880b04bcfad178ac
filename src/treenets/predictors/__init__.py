"""User-facing models: a trained network with its vocabulary and config, ready to predict.

`Predictor.load(path)` (also `treenets.load`) returns the predictor of the checkpoint's task —
`LanguageModel` (score sentences, read syntactic distances, parse), `RelatednessPredictor` (score sentence
pairs), `SentimentClassifier` (classify sentences and their phrases) or `LogicClassifier` (the relation of two
formulas) — each with `predict`, `save` and typed results, and the inputs it reads as `treenets predict`'s
options (`inputs`, `predict_inputs`; `prediction_inputs` gathers those of every task).
"""

from treenets.predictors.base import PredictionInput, Predictor, prediction_inputs
from treenets.predictors.lm import LanguageModel, Parse, SentenceScore
from treenets.predictors.logic import LogicClassifier, Relation
from treenets.predictors.relatedness import Relatedness, RelatednessPredictor
from treenets.predictors.sentiment import Sentiment, SentimentClassifier

__all__ = ["LanguageModel", "LogicClassifier", "Parse", "PredictionInput", "Predictor", "Relatedness",
           "RelatednessPredictor", "Relation", "SentenceScore", "Sentiment", "SentimentClassifier", "prediction_inputs"]
