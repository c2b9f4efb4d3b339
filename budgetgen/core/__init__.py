"""What an input means, shared by every layer: the schema (every column and setting declared once), the
records that vary (tiers, kinds), typed values and inputs, errors, warnings and the Chinese texts."""
