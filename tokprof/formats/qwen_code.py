FORMAT = "qwen_code"
DESCRIPTION = "x"

def sniff(doc):
    return False
