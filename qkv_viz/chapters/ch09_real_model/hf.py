"""The same model files run by Hugging Face ``transformers``, without its log lines."""
from __future__ import annotations


def transformers_bert(model_dir):
    """``transformers.BertModel.from_pretrained(model_dir)`` with the "eager" attention (so that
    ``output_attentions=True`` returns the weights), in eval mode, offline, with transformers'
    warnings and progress bars switched off."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return transformers.BertModel.from_pretrained(model_dir, local_files_only=True,
                                                  attn_implementation="eager").eval()
