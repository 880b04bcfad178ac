"""User-facing models: a trained network with its vocabulary and config, ready to predict.

`Predictor.load(path)` (also `treenets.load`) returns the predictor of the checkpoint's task —
`LanguageModel` (score sentences, read syntactic distances, parse), `RelatednessPredictor` (score sentence
pairs), `SentimentClassifier` (classify sentences and their phrases), `LogicClassifier` (the relation of two
formulas) or `ListOpsClassifier` (the value of a ListOps sequence); the last two also parse with an Ordered
Memory encoder (`InducedParse`) — each with `predict`, `save` and typed results, and the inputs it reads as
`treenets predict`'s options (`inputs`, `predict_inputs`; `prediction_inputs` gathers those of every task).
"""

from treenets.predictors.base import PredictionInput, Predictor, prediction_inputs
from treenets.predictors.induced import InducedParse
from treenets.predictors.listops import ListOpsClassifier, ListOpsValue
from treenets.predictors.lm import LanguageModel, SentenceScore
from treenets.predictors.logic import LogicClassifier, Relation
from treenets.predictors.parse import Parse
from treenets.predictors.relatedness import Relatedness, RelatednessPredictor
from treenets.predictors.sentiment import Sentiment, SentimentClassifier

__all__ = ["InducedParse", "LanguageModel", "ListOpsClassifier", "ListOpsValue", "LogicClassifier", "Parse",
           "PredictionInput", "Predictor", "Relatedness", "RelatednessPredictor", "Relation", "SentenceScore",
           "Sentiment", "SentimentClassifier", "prediction_inputs"]
