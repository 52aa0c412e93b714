"""The index passes after embedding, one module each, registered here in the order a run runs them
(``registry``): subtitles before speech (a file with subtitles is not heard), captions and descriptions before
the vectors made of them; each unit's per-concept vectors last."""

from retrieval.pipeline.passes.captions import CaptionsPass
from retrieval.pipeline.passes.concept_vectors import ConceptVectorsPass
from retrieval.pipeline.passes.description_vectors import DescriptionVectorsPass
from retrieval.pipeline.passes.descriptions import DescriptionsPass
from retrieval.pipeline.passes.registry import register
from retrieval.pipeline.passes.speech import SpeechPass
from retrieval.pipeline.passes.subtitles import SubtitlesPass

for _built_in in (SubtitlesPass, SpeechPass, CaptionsPass, DescriptionsPass, DescriptionVectorsPass,
                   ConceptVectorsPass):
    register(_built_in)
