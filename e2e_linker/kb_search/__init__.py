"""The one linking core both annotate and normalize use: name-vector cache, search backends, entity index, sieves, name forms and abbreviations."""
