"""The bundled example corpus (a fictional organisation) and its settings, shipped as package
data so that ``affidavit demo`` works from any install."""
