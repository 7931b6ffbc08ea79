"""The verification layers an answer's claims pass before the Boundary Gate decides: the
lexical and numeric checks (:mod:`~affidavit.answer.verify.claims_check`, ``check``,
``facts``, ``support``), the trained entailment layer (``nli``), the bearing of claims on the
question (``bearing``), stability, the gate (``gate``) and the proof it records (``proof``)."""
