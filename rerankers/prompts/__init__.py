"""What a video LMM is asked, task by task, and how its answers are read: the ConViS similarity rating
(``similarity``), descriptions of one clip (``describe``), VQAScore's yes/no questions (``vqascore``) and
VidDiff's differences between two clips (``diff``)."""
