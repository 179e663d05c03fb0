"""Everything after the model's reply, below the methods that produce it: the :class:`~.question.Answer` value,
citations and evidence (:mod:`.evidence`), support and abstention (:mod:`.support`), the verifier (:mod:`.verify`),
the answer's declared options (:mod:`.options`) and the one entry that applies them (:func:`.finish.finish`)."""
