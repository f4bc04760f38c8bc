"""The consolidate story on switchboard-worker; two facts clash when one keeps a meat-free diet and the other eats meat."""
from switchboard_worker import Definition, Reporter, Skill, TaskContext, Worker

MEAT, NO = {"steak", "beef", "chicken", "pork", "bacon", "ham", "burger", "meat", "fish"}, {"not", "never", "no"}
SKILL = Skill("consolidate", "Memory consolidation", tags=["memory"], examples=["I'm vegetarian\nI had a steak"])
worker, words = Worker(capacity=8), lambda text: {w.strip(".,;:!?").lower() for w in text.split()}
clash = lambda a, b: words(a) & {"vegetarian", "vegan"} and "not veg" not in a.lower() and words(b) & MEAT and not words(b) & NO


@worker.agent(Definition("consolidate", "Consolidates transcripts (one per line) into facts", skills=[SKILL]))
async def consolidate(ctx: TaskContext, report: Reporter) -> None:
    transcripts, *answers = ctx.user_texts()  # the first message, then each answer the user gave
    if not (facts := [t.strip().rstrip(".") for t in transcripts.splitlines() if t.strip()]):
        return await report.reject("send at least one transcript, one per line")
    for k in range(1, len(facts) + 1) if not answers else ():
        await ctx.sleep(0.2)  # stands in for the model reading transcript k
        await report.working(f"transcript {k}/{len(facts)}")
    while pairs := [(a, b) for a in facts for b in facts if clash(a, b)]:
        if not answers:
            return await report.input_required(f'"{pairs[0][0]}" and "{pairs[0][1]}" contradict each other: which holds?')
        (a, b), answer = pairs[0], words(answers.pop(0))  # the answer keeps the fact it shares more words with
        facts.remove(a if len(words(b) & answer) > len(words(a) & answer) else b)
    for i, fact in enumerate(facts):  # streamed as a model would, one fact per delta
        await report.stream_text("facts", ("\n" if i else "") + f"- {fact}", name="facts")
    await report.complete(f"consolidated {len(facts)} facts from {len(transcripts.splitlines())} transcripts")


if __name__ == "__main__":
    worker.main()
